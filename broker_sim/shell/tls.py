"""The fleet's TLS: `--tls-cert PATH --tls-key PATH --tls-ca PATH`, all three or none.

Rules:
- Without the flags nothing changes: plain TCP both ways, listeners registered as PLAINTEXT (0).
- Client side (`client_context`): every connection the fleet opens to a controller (each broker's
  two, the admin's, the start-up reach, the quorum probes' writes) is TLS 1.2+: the fleet's
  certificate is presented, the controller's is verified against the CA file alone (no system
  CAs), and its name checked against the `--controller` host the connection dials (an IP address
  against the certificate's IP addresses).
- Server side (`listener_context`): each broker's control listener is TLS-only, presents the
  fleet's certificate (which must therefore name `--listen-host`, the host the brokers register
  and the controller checks), and requires a client certificate issued by the CA (Kafka's
  `ssl.client.auth=required`); the brokers register it as SSL (1), listener name "SSL".
- `FleetTls` holds the paths, not contexts: a `FleetConfig` crosses to the worker processes of
  `--processes`, and contexts do not pickle; each process builds its own (`contexts`).
- `contexts` checks every file before anything starts: a missing or unreadable file, or one that
  holds no usable certificate, key or CA, is a `TlsError` of one line naming the flag and the file
  (the CLI's exit 2).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

import trio

from protocol.security_protocol import SecurityProtocol

from . import runtime

#: what a broker registers its listener as, by whether it is TLS
LISTENER_PROTOCOL = {False: SecurityProtocol.PLAINTEXT, True: SecurityProtocol.SSL}


class TlsError(Exception):
    """The TLS flags cannot make a context: one line, naming the flag and the file."""


@dataclass(frozen=True)
class FleetTls:
    """The fleet's certificate and key (presented both ways) and the CA it trusts (both ways)."""

    cert: Path
    key: Path
    ca: Path

    def client_context(self) -> ssl.SSLContext:
        """For the fleet's connections to controllers."""
        return self._context(ssl.Purpose.SERVER_AUTH)

    def listener_context(self) -> ssl.SSLContext:
        """For the brokers' control listeners: a client certificate from the CA required."""
        context = self._context(ssl.Purpose.CLIENT_AUTH)
        context.verify_mode = ssl.CERT_REQUIRED
        return context

    def contexts(self) -> tuple[ssl.SSLContext, ssl.SSLContext]:
        """(client, listener) contexts; raises `TlsError` (one line) on a file it cannot use."""
        return self.client_context(), self.listener_context()

    def _context(self, purpose: ssl.Purpose) -> ssl.SSLContext:
        for flag, path in (("--tls-cert", self.cert), ("--tls-key", self.key), ("--tls-ca", self.ca)):
            try:
                with open(path, "rb") as file:
                    file.read(1)
            except OSError as exc:
                raise TlsError(f"{flag} {path}: {exc.strerror or exc}") from exc
        context = ssl.SSLContext(
            ssl.PROTOCOL_TLS_CLIENT if purpose is ssl.Purpose.SERVER_AUTH else ssl.PROTOCOL_TLS_SERVER
        )
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_verify_locations(cafile=self.ca)
        except ssl.SSLError as exc:
            raise TlsError(f"--tls-ca {self.ca}: no usable CA certificate ({_why(exc)})") from exc
        try:
            context.load_cert_chain(self.cert, self.key)
        except ssl.SSLError as exc:
            if "KEY_VALUES_MISMATCH" in str(exc):
                raise TlsError(
                    f"--tls-key {self.key} does not match the certificate in --tls-cert {self.cert}"
                ) from exc
            raise TlsError(
                f"--tls-cert {self.cert} / --tls-key {self.key}: no usable certificate and key ({_why(exc)})"
            ) from exc
        return context


def _why(exc: ssl.SSLError) -> str:
    return str(exc.reason or exc).lower().replace("_", " ")


async def open_stream(host: str, port: int, context: ssl.SSLContext | None) -> trio.abc.Stream:
    """A connection to HOST:PORT, over TLS (handshake done, the name checked against `host`) when
    a client context is given, plain TCP otherwise; the caller bounds the time."""
    tcp = await runtime.current().open_tcp_stream(host, port)
    if context is None:
        return tcp
    stream = trio.SSLStream(tcp, context, server_hostname=host)
    try:
        await stream.do_handshake()
    except BaseException:
        await trio.aclose_forcefully(tcp)
        raise
    return stream
