"""The control channel's transports: which registered listeners it can speak to, and its TLS client
(the quorum's Raft links open theirs with the same `open_stream` and context).

Rules:
- The channel reaches a broker at the listener `engine.broker_address` gives (the broker's first
  registered listener, fencer's choice since the channel exists; Kafka's ZooKeeper-era controller
  takes the inter-broker listener) and speaks that listener's security protocol: PLAINTEXT over
  TCP; SSL over TLS when the channel was given a client context (`client_context`); anything
  else (SASL_PLAINTEXT, SASL_SSL, a code Kafka does not know, SSL without a context) it cannot
  speak, and does not attempt (`transport_for` is None; the channel logs and counts it once per
  broker incarnation).
- Over TLS the channel presents the controller's certificate and checks the broker's against the
  CA, and its name against the host the broker registered (`server_hostname`: an IP address is
  matched against the certificate's IP addresses), as Kafka's
  `ssl.endpoint.identification.algorithm=https` does. TLS 1.2 and later.
- `client_context` checks its files before anything connects: a missing or unreadable file, or
  one that holds no usable certificate, key or CA, is a `ValueError` of one line naming the file.
"""

from __future__ import annotations

import enum
import ssl
from pathlib import Path

import trio

from protocol.security_protocol import SecurityProtocol

from .. import runtime


class Transport(enum.Enum):
    PLAINTEXT = "plaintext"
    TLS = "tls"


def transport_for(security_protocol: int, tls: ssl.SSLContext | None) -> Transport | None:
    """How to reach a listener of `security_protocol` (None: the channel cannot speak it)."""
    if security_protocol == SecurityProtocol.PLAINTEXT:
        return Transport.PLAINTEXT
    if security_protocol == SecurityProtocol.SSL and tls is not None:
        return Transport.TLS
    return None


async def open_stream(host: str, port: int, transport: Transport, tls: ssl.SSLContext | None) -> trio.abc.Stream:
    """A connection to a broker's listener (or another voter's), its TLS handshake done, the peer's
    certificate checked against `host` (the caller bounds the time)."""
    tcp = await runtime.current().open_tcp_stream(host, port)
    if transport is Transport.PLAINTEXT:
        return tcp
    if tls is None:
        raise ValueError("a TLS transport without a client context")
    stream = trio.SSLStream(tcp, tls, server_hostname=host)
    try:
        await stream.do_handshake()
    except BaseException:
        await trio.aclose_forcefully(tcp)
        raise
    return stream


def failure_text(exc: BaseException) -> str:
    """A connection failure in a log line: a failed TLS handshake names the TLS error (trio wraps it)."""
    cause = exc.__cause__
    if isinstance(exc, trio.BrokenResourceError) and isinstance(cause, ssl.SSLError):
        return f"TLS: {cause}"
    return f"{type(exc).__name__}: {exc}"


def client_context(cert: Path, key: Path, ca: Path | None = None) -> ssl.SSLContext:
    """The channel's TLS client context: the controller's certificate chain and key, presented to
    every broker; brokers' certificates verified against `ca` (None: the system's CAs) and their
    host names checked. Raises ValueError (one line) on a file it cannot use."""
    for path in (cert, key, ca):
        if path is not None and not path.is_file():
            raise ValueError(f"{path}: not a readable file")
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        if ca is not None:
            context.load_verify_locations(cafile=ca)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"{ca}: no usable CA certificate ({exc})") from exc
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"{cert} / {key}: no usable certificate and key ({exc})") from exc
    return context
