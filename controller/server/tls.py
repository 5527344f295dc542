"""TLS on the Kafka listener: the server's context from the flags, a handshake's failure named, the
peer's principal.

Rules:
- `--tls-cert PATH --tls-key PATH` make the listener TLS-only (TLS 1.2 and later, the
  defaults of `ssl.create_default_context(Purpose.CLIENT_AUTH)` otherwise); with `--tls-ca PATH`
  every client must present a certificate issued by that CA, and by it only (Kafka's
  `ssl.client.auth=required`): `verify_mode = CERT_REQUIRED`, no system CAs.
- `server_context` checks everything before the daemon listens: a missing or unreadable file, a
  file that holds no certificate or key, a key that does not match the certificate, is a
  `TlsConfigError` whose message is one line naming the flag and the file (the CLI exits 2).
- Each connection's handshake runs in that connection's own task, under the handshake timeout
  (`controller.server.connection`): a stalled or failed handshake holds nothing else up. Its
  failure is named by `failure_reason` (a metric label: timeout, no_certificate,
  bad_certificate, not_tls, closed, principal, other).
- The peer's principal (`peer_principal`) is Kafka's: "User:ANONYMOUS" without TLS or without a
  client certificate; with one, "User:" and the certificate's subject as Java prints it, mapped
  by the principal mapping rules (`controller.auth.principal`; the default rule keeps the DN).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from ..auth.principal import ANONYMOUS, principal_name
from ..auth.principal_mapping import NoMatchingRule, PrincipalMappingRules, parse_rules

#: Kafka's default `ssl.principal.mapping.rules`: the DN as it is
DEFAULT_MAPPING_RULES = parse_rules(None)
DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000
__all__ = ["ANONYMOUS", "TlsConfigError", "TlsOptions", "failure_reason", "peer_principal", "server_context"]
#: the reasons a handshake fails, the metric's label values (`failure_reason`)
HANDSHAKE_FAILURE_REASONS = ("timeout", "no_certificate", "bad_certificate", "not_tls", "closed", "principal", "other")


class TlsConfigError(Exception):
    """The TLS flags cannot make a server context: one line, naming the flag and the file."""


@dataclass(frozen=True)
class TlsOptions:
    """The listener's TLS: its context and how long a handshake may take."""

    context: ssl.SSLContext
    handshake_timeout_s: float = DEFAULT_HANDSHAKE_TIMEOUT_MS / 1000
    mapping_rules: PrincipalMappingRules = DEFAULT_MAPPING_RULES
    #: the control channel's client context (the same certificate, presented to brokers' SSL listeners)
    client: ssl.SSLContext | None = None
    #: this node's own principal: its certificate's, mapped (what a voter sharing it presents);
    #: None when no mapping rule maps its subject
    principal: str | None = None

    @property
    def clients_authenticated(self) -> bool:
        """Whether every client must present a certificate this listener verifies (`--tls-ca`)."""
        return self.context.verify_mode == ssl.CERT_REQUIRED


def _readable(flag: str, path: Path) -> None:
    try:
        with open(path, "rb") as file:
            file.read(1)
    except OSError as exc:
        raise TlsConfigError(f"{flag} {path}: {exc.strerror or exc}") from exc


def server_context(cert: Path, key: Path, ca: Path | None = None) -> ssl.SSLContext:
    """The listener's context: our certificate chain and key; with `ca`, client certificates
    required and verified against that CA alone."""
    for flag, path in (("--tls-cert", cert), ("--tls-key", key), ("--tls-ca", ca)):
        if path is not None:
            _readable(flag, path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        if "KEY_VALUES_MISMATCH" in str(exc):
            raise TlsConfigError(f"--tls-key {key} does not match the certificate in --tls-cert {cert}") from exc
        why = _why(exc)
        raise TlsConfigError(f"--tls-cert {cert} / --tls-key {key}: no usable certificate and key ({why})") from exc
    if ca is not None:
        try:
            context.load_verify_locations(cafile=ca)
        except ssl.SSLError as exc:
            raise TlsConfigError(f"--tls-ca {ca}: no usable CA certificate ({_why(exc)})") from exc
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def _why(exc: ssl.SSLError) -> str:
    return str(exc.reason or exc).lower().replace("_", " ")


def certificate_principal(cert: Path, rules: PrincipalMappingRules = DEFAULT_MAPPING_RULES) -> str:
    """The principal of the first certificate of a PEM file, as a peer presenting it would be
    named (`TlsConfigError` if its subject maps to no principal)."""
    try:
        der = ssl.PEM_cert_to_DER_cert(cert.read_text())
        return principal_name(der, rules)
    except (OSError, ValueError, NoMatchingRule) as exc:
        raise TlsConfigError(f"--tls-cert {cert}: its subject names no principal ({exc})") from exc


def failure_reason(exc: BaseException | None) -> str:
    """A failed handshake's reason, for the metric's label (None: it timed out)."""
    if exc is None:
        return "timeout"
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, ssl.SSLError):
        cause = cause.__cause__ or cause.__context__
    if cause is None:
        return "closed"  # the peer left (an end of stream or a reset) during the handshake
    text = f"{cause.reason} {cause}".upper()
    if "PEER_DID_NOT_RETURN_A_CERTIFICATE" in text or "CERTIFICATE_REQUIRED" in text:
        return "no_certificate"
    if "CERTIFICATE" in text or "UNKNOWN_CA" in text:
        return "bad_certificate"
    if any(name in text for name in ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "UNKNOWN_PROTOCOL", "RECORD_LAYER")):
        return "not_tls"
    if isinstance(cause, ssl.SSLEOFError) or "EOF" in text:
        return "closed"
    return "other"


def peer_principal(certificate_der: bytes | None, rules: PrincipalMappingRules = DEFAULT_MAPPING_RULES) -> str:
    """The peer's principal from its certificate (DER, `getpeercert(binary_form=True)`), or
    "User:ANONYMOUS" without one. Raises ValueError (a malformed certificate) or
    `controller.auth.principal_mapping.NoMatchingRule` (no rule maps its DN): refuse the peer."""
    return principal_name(certificate_der, rules)
