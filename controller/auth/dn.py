"""A certificate's subject as Java's `X500Principal.getName()` prints it (RFC 2253), the string
Kafka's SSL principal mapping rules see.

Rules (JDK 17 sun.security.x509 X500Name, RDN, AVA, AVAKeyword):
- The subject is read from the certificate's own bytes (the TBSCertificate's sixth field, after
  the optional [0] version), not re-encoded: RDNs print last first, joined by ','; the AVAs of a
  multi-valued RDN print in their encoded order, joined by '+'. An empty subject is "".
- Keywords: CN, C, L, ST, O, OU, STREET, DC, UID; any other attribute type prints as its dotted
  OID (emailAddress is 1.2.840.113549.1.9.1) and its value as '#' and the lowercase hex of the
  value's DER encoding (tag, minimal length, contents).
- A value that is not PrintableString, T61String, IA5String, GeneralString, BMPString or
  UTF8String (by its tag byte) prints as '#' + hex too, keyword or not.
- A string value's content bytes are decoded as UTF-8 whatever the string type (a BMPString's
  UTF-16 too, as Java does), malformed bytes becoming U+FFFD where the JDK's decoder cuts them
  (`java_utf8`; an encoded surrogate is one U+FFFD, Python's "replace" makes three). Then each of , = + < > # ; " \\ is
  preceded by '\\' (anywhere in the value, '#' and '=' included), NUL becomes "\\00", and the
  leading and trailing spaces and CRs of the result are preceded by '\\'. Nothing else is escaped:
  non-ASCII characters print as themselves.
- Input that is not DER Java would read (bad lengths, indefinite lengths, a multi-byte tag, an
  AVA with extra fields, a non-OID type) raises `CertificateError`.
"""

from __future__ import annotations

from cryptography import x509

SEQUENCE = 0x30
SET = 0x31
OID = 0x06
_STRING_TAGS = frozenset({0x13, 0x14, 0x16, 0x1B, 0x1E, 0x0C})  # Printable, T61, IA5, General, BMP, UTF8
_ESCAPED = frozenset(',=+<>#;"\\')

_KEYWORDS = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.9": "STREET",
    "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}


class CertificateError(ValueError):
    """The certificate or name is not DER that Java would read."""


def _tlv(data: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """(tag, contents start, contents end) of the DER element at `pos`, which must end by `end`."""
    if pos + 2 > end:
        raise CertificateError(f"truncated DER element at offset {pos}")
    tag, first = data[pos], data[pos + 1]
    if tag & 0x1F == 0x1F:
        raise CertificateError(f"multi-byte DER tag at offset {pos}")
    start = pos + 2
    if first < 0x80:
        length = first
    elif first == 0x80 or first > 0x84:
        raise CertificateError(f"unsupported DER length byte {first:#x} at offset {pos + 1}")
    else:
        count = first & 0x7F
        if start + count > end:
            raise CertificateError(f"truncated DER length at offset {pos + 1}")
        length = int.from_bytes(data[start : start + count], "big")
        if length < 0x80 or data[start] == 0:
            raise CertificateError(f"non-minimal DER length at offset {pos + 1}")
        start += count
    if start + length > end:
        raise CertificateError(f"DER element at offset {pos} runs past its container")
    return tag, start, start + length


def _children(data: bytes, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """The elements inside [start, end): (tag, element start, contents start, contents end)."""
    found = []
    pos = start
    while pos < end:
        tag, body, body_end = _tlv(data, pos, end)
        found.append((tag, pos, body, body_end))
        pos = body_end
    return found


def _expect(data: bytes, pos: int, end: int, tag: int, what: str) -> tuple[int, int]:
    found, body, body_end = _tlv(data, pos, end)
    if found != tag:
        raise CertificateError(f"{what}: expected tag {tag:#04x}, got {found:#04x}")
    return body, body_end


def oid_text(contents: bytes) -> str:
    """An OBJECT IDENTIFIER's contents in dotted form, as Java's ObjectIdentifier.toString prints it."""
    arcs: list[int] = []
    value = 0
    for byte in contents:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    if not arcs or contents[-1] & 0x80:
        raise CertificateError(f"malformed OID {contents.hex()}")
    first = arcs[0]
    head = [0, first] if first < 40 else [1, first - 40] if first < 80 else [2, first - 80]
    return ".".join(str(arc) for arc in head + arcs[1:])


def _der_length(length: int) -> bytes:
    if length < 0x80:
        return bytes([length])
    size = (length.bit_length() + 7) // 8
    return bytes([0x80 | size]) + length.to_bytes(size, "big")


def _continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _decode3(data: bytes, at: int) -> tuple[str, int]:
    """A three-byte lead at `at`: (text, bytes consumed), or ("", 0) past the end (JDK's rules)."""
    lead, rest = data[at], data[at + 1 : at + 3]
    overlong = lead == 0xE0 and len(rest) > 0 and rest[0] & 0xE0 == 0x80
    if len(rest) < 2:
        malformed = len(rest) == 1 and (overlong or not _continuation(rest[0]))
        return ("\ufffd", 1) if malformed else ("\ufffd", len(data) - at)
    if overlong or not _continuation(rest[0]) or not _continuation(rest[1]):
        return "\ufffd", 1 if overlong or not _continuation(rest[0]) else 2
    char = ((lead & 0x0F) << 12) | ((rest[0] & 0x3F) << 6) | (rest[1] & 0x3F)
    return ("\ufffd" if 0xD800 <= char <= 0xDFFF else chr(char)), 3


def _decode4(data: bytes, at: int) -> tuple[str, int]:
    """A four-byte lead at `at`: (text, bytes consumed) (JDK's rules)."""
    lead, rest = data[at], data[at + 1 : at + 4]
    bad_second = len(rest) > 0 and (
        (lead == 0xF0 and not 0x90 <= rest[0] <= 0xBF)
        or (lead == 0xF4 and rest[0] & 0xF0 != 0x80)
        or not _continuation(rest[0])
    )
    if len(rest) < 3:
        if lead > 0xF4 or bad_second:
            return "\ufffd", 1
        if len(rest) == 2 and not _continuation(rest[1]):
            return "\ufffd", 2
        return "\ufffd", len(data) - at
    char = ((lead & 0x07) << 18) | ((rest[0] & 0x3F) << 12) | ((rest[1] & 0x3F) << 6) | (rest[2] & 0x3F)
    if all(_continuation(byte) for byte in rest) and 0x10000 <= char <= 0x10FFFF:
        return chr(char), 4
    if lead > 0xF4 or bad_second:
        return "\ufffd", 1
    return "\ufffd", 2 if not _continuation(rest[1]) else 3


def java_utf8(data: bytes) -> str:
    """`new String(data, UTF_8)`: malformed input becomes U+FFFD as the JDK's decoder cuts it, which
    is not always as Python's "replace" does (an encoded surrogate is one U+FFFD, not three)."""
    out: list[str] = []
    at = 0
    while at < len(data):
        lead = data[at]
        if lead < 0x80:
            text, used = chr(lead), 1
        elif 0xC2 <= lead <= 0xDF:
            valid = at + 1 < len(data) and _continuation(data[at + 1])
            text, used = (chr(((lead & 0x1F) << 6) | (data[at + 1] & 0x3F)), 2) if valid else ("\ufffd", 1)
        elif 0xE0 <= lead <= 0xEF:
            text, used = _decode3(data, at)
        elif 0xF0 <= lead <= 0xF7:
            text, used = _decode4(data, at)
        else:
            text, used = "\ufffd", 1
        out.append(text)
        at += used
    return "".join(out)


def escape_value(text: str) -> str:
    """An AVA's string value escaped as AVA.toRFC2253String does."""
    escaped = "".join("\\" + char if char in _ESCAPED else "\\00" if char == "\0" else char for char in text)
    lead = len(escaped) - len(escaped.lstrip(" \r"))
    trail = max(lead, len(escaped.rstrip(" \r")))
    head, middle, tail = escaped[:lead], escaped[lead:trail], escaped[trail:]
    return "".join("\\" + char for char in head) + middle + "".join("\\" + char for char in tail)


def _ava_text(data: bytes, start: int, end: int) -> str:
    parts = _children(data, start, end)
    if len(parts) != 2 or parts[0][0] != OID:
        raise CertificateError("an AttributeTypeAndValue is not (OID, value)")
    oid = oid_text(data[parts[0][2] : parts[0][3]])
    tag, _, body, body_end = parts[1]
    keyword = _KEYWORDS.get(oid, oid)
    if keyword[0].isdigit() or tag not in _STRING_TAGS:
        encoded = bytes([tag]) + _der_length(body_end - body) + data[body:body_end]
        return f"{keyword}=#{encoded.hex()}"
    return f"{keyword}={escape_value(java_utf8(data[body:body_end]))}"


def rfc2253_name(name_der: bytes) -> str:
    """A DER Name as X500Principal(name_der).getName() prints it."""
    body, body_end = _expect(name_der, 0, len(name_der), SEQUENCE, "Name")
    if body_end != len(name_der):
        raise CertificateError("bytes after the Name")
    rdns = []
    for tag, _, rdn_body, rdn_end in _children(name_der, body, body_end):
        if tag != SET:
            raise CertificateError(f"an RDN is not a SET (tag {tag:#04x})")
        avas = []
        for ava_tag, _, ava_body, ava_end in _children(name_der, rdn_body, rdn_end):
            if ava_tag != SEQUENCE:
                raise CertificateError(f"an AVA is not a SEQUENCE (tag {ava_tag:#04x})")
            avas.append(_ava_text(name_der, ava_body, ava_end))
        if not avas:
            raise CertificateError("an empty RDN")
        rdns.append("+".join(avas))
    return ",".join(reversed(rdns))


def subject_der(certificate_der: bytes) -> bytes:
    """The subject Name's bytes, as encoded in the certificate."""
    try:
        tbs = x509.load_der_x509_certificate(certificate_der).tbs_certificate_bytes
    except ValueError as error:
        raise CertificateError(f"not a DER X.509 certificate: {error}") from error
    body, body_end = _expect(tbs, 0, len(tbs), SEQUENCE, "TBSCertificate")
    fields = _children(tbs, body, body_end)
    if fields and fields[0][0] == 0xA0:  # [0] EXPLICIT version
        fields = fields[1:]
    if len(fields) < 5:
        raise CertificateError("a TBSCertificate without a subject")
    _, start, _, end = fields[4]  # serial, signature, issuer, validity, subject
    return tbs[start:end]


def subject_name(certificate_der: bytes) -> str:
    """A certificate's subject as X509Certificate.getSubjectX500Principal().getName() prints it."""
    return rfc2253_name(subject_der(certificate_der))
