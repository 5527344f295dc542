"""Certificates and names for the DN tests: minted with `cryptography` (self-signed, one EC key),
issued by `trustme`, or hand-encoded DER for what no library writes (odd string types, malformed
UTF-8, non-string values, an unsorted multi-valued RDN)."""

from __future__ import annotations

import datetime
from functools import cache

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

EMAIL = x509.ObjectIdentifier("1.2.840.113549.1.9.1")
UTF8, PRINTABLE, T61, IA5, GENERAL, BMP, INTEGER, SEQUENCE = 0x0C, 0x13, 0x14, 0x16, 0x1B, 0x1E, 0x02, 0x30


@cache
def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def mint(subject: x509.Name) -> bytes:
    """A self-signed certificate (DER) with `subject`."""
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "issuer")]))
        .public_key(_key().public_key())
        .serial_number(12345)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    return builder.sign(_key(), hashes.SHA256()).public_bytes(serialization.Encoding.DER)


def trustme_leaf(common_name: str | None = None) -> bytes:
    """A leaf certificate trustme issues (subject O=trustme..., OU=Testing cert #..., CN=...)."""
    pem = trustme.CA().issue_cert("client.example", common_name=common_name).cert_chain_pems[0].bytes()
    return x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)


def name(*rdns: list[tuple[x509.ObjectIdentifier, str]]) -> x509.Name:
    """A Name from RDNs listed first to last (as encoded; Java prints the last first)."""
    return x509.Name(
        [x509.RelativeDistinguishedName([x509.NameAttribute(oid, value) for oid, value in rdn]) for rdn in rdns]
    )


def tlv(tag: int, content: bytes) -> bytes:
    if len(content) < 0x80:
        return bytes([tag, len(content)]) + content
    size = (len(content).bit_length() + 7) // 8
    return bytes([tag, 0x80 | size]) + len(content).to_bytes(size, "big") + content


def oid_der(dotted: str) -> bytes:
    arcs = [int(arc) for arc in dotted.split(".")]
    out = bytearray()
    for arc in [arcs[0] * 40 + arcs[1], *arcs[2:]]:
        chunk = [arc & 0x7F]
        while arc > 0x7F:
            arc >>= 7
            chunk.append(0x80 | (arc & 0x7F))
        out += bytes(reversed(chunk))
    return tlv(0x06, bytes(out))


def der_name(*rdns: list[tuple[str, int, bytes]]) -> bytes:
    """A Name encoded by hand: RDNs first to last, each a list of (OID, value tag, value contents)
    kept in the given order (DER would sort a multi-valued RDN's values)."""
    encoded = b"".join(
        tlv(0x31, b"".join(tlv(0x30, oid_der(oid) + tlv(tag, content)) for oid, tag, content in rdn)) for rdn in rdns
    )
    return tlv(0x30, encoded)
