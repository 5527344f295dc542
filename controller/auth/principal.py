"""The principal of a connection, as Kafka's DefaultKafkaPrincipalBuilder builds it.

Rules: no TLS, or TLS without a client certificate, is "User:ANONYMOUS" (Kafka's
KafkaPrincipal.ANONYMOUS; the peer unverified). With a certificate (DER, as Python's
`getpeercert(binary_form=True)` gives it), the name is the subject DN as Java prints it
(`dn.subject_name`) mapped by `ssl.principal.mapping.rules` (`principal_mapping`), and the type
"User". A DN no rule maps raises `NoMatchingRule`; a malformed certificate `CertificateError`:
the connection is refused either way.
"""

from __future__ import annotations

from .dn import subject_name
from .principal_mapping import PrincipalMappingRules

USER_TYPE = "User"
ANONYMOUS = f"{USER_TYPE}:ANONYMOUS"


def principal_name(certificate_der: bytes | None, rules: PrincipalMappingRules) -> str:
    """ "User:<name>" for a peer certificate, or "User:ANONYMOUS" without one."""
    if certificate_der is None:
        return ANONYMOUS
    return f"{USER_TYPE}:{rules.map(subject_name(certificate_der))}"
