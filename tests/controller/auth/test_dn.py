"""The subject DN as Java's X500Principal.getName() prints it (controller/auth/dn.py); the JDK itself
checks the same certificates and names in test_java_oracle.py."""

from __future__ import annotations

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID
from hypothesis import given
from hypothesis import strategies as st

from controller.auth.dn import CertificateError, escape_value, oid_text, rfc2253_name, subject_der, subject_name

from .certs import BMP, EMAIL, INTEGER, T61, UTF8, der_name, mint, name, oid_der, tlv, trustme_leaf

CN, ORG, OU = "2.5.4.3", "2.5.4.10", "2.5.4.11"


def test_rdns_print_last_first_with_their_keywords() -> None:
    subject = name(
        [(NameOID.DOMAIN_COMPONENT, "org")],
        [(NameOID.DOMAIN_COMPONENT, "example")],
        [(NameOID.COUNTRY_NAME, "US")],
        [(NameOID.STATE_OR_PROVINCE_NAME, "CA")],
        [(NameOID.LOCALITY_NAME, "Palo Alto")],
        [(NameOID.STREET_ADDRESS, "1 Main St")],
        [(NameOID.ORGANIZATION_NAME, "Org")],
        [(NameOID.ORGANIZATIONAL_UNIT_NAME, "Unit")],
        [(NameOID.USER_ID, "u1")],
        [(NameOID.COMMON_NAME, "alice")],
    )
    assert (
        subject_name(mint(subject))
        == "CN=alice,UID=u1,OU=Unit,O=Org,STREET=1 Main St,L=Palo Alto,ST=CA,C=US,DC=example,DC=org"
    )


def test_attributes_without_an_rfc2253_keyword_print_as_oid_and_der_hex() -> None:
    subject = name([(NameOID.SERIAL_NUMBER, "42")], [(EMAIL, "a@b.c")], [(NameOID.COMMON_NAME, "x")])
    email_der = tlv(0x16, b"a@b.c")  # an IA5String
    serial_der = tlv(0x13, b"42")  # a PrintableString
    assert subject_name(mint(subject)) == f"CN=x,1.2.840.113549.1.9.1=#{email_der.hex()},2.5.4.5=#{serial_der.hex()}"


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        ('a,b+c"d;e<f>g\\h=i', 'a\\,b\\+c\\"d\\;e\\<f\\>g\\\\h\\=i'),
        ("#lead and mid#", "\\#lead and mid\\#"),
        ("  two spaces  ", "\\ \\ two spaces\\ \\ "),
        ("   ", "\\ \\ \\ "),
        ("Ünïcödé 名前 😀", "Ünïcödé 名前 😀"),
        ("a\0b", "a\\00b"),
        ("\r x \r", "\\\r\\ x\\ \\\r"),
        ("in side", "in side"),
    ],
)
def test_value_escaping(value: str, printed: str) -> None:
    assert escape_value(value) == printed
    assert rfc2253_name(der_name([(CN, UTF8, value.encode())])) == f"CN={printed}"


def test_a_multi_valued_rdn_prints_its_values_in_encoded_order_joined_by_plus() -> None:
    encoded = der_name([(ORG, UTF8, b"zeta"), (CN, UTF8, b"alpha")], [(OU, UTF8, b"last")])
    assert rfc2253_name(encoded) == "OU=last,O=zeta+CN=alpha"
    minted = subject_name(mint(name([(NameOID.COMMON_NAME, "bob"), (NameOID.USER_ID, "b1")])))
    assert sorted(minted.split("+")) == ["CN=bob", "UID=b1"]


def test_string_contents_are_read_as_utf8_whatever_the_string_type() -> None:
    # Java decodes a BMPString's UTF-16 bytes as UTF-8 too: 00 E9 is NUL, then a malformed byte
    assert rfc2253_name(der_name([(CN, BMP, "é".encode("utf-16-be"))])) == "CN=\\00\ufffd"
    assert rfc2253_name(der_name([(CN, T61, "é".encode("latin-1"))])) == "CN=\ufffd"


def test_non_string_values_print_as_der_hex_even_under_a_keyword() -> None:
    assert rfc2253_name(der_name([(CN, INTEGER, b"\x05")])) == "CN=#020105"
    assert rfc2253_name(der_name([("2.999.3", UTF8, b"x")])) == "2.999.3=#0c0178"


def test_oid_text_reads_every_arc() -> None:
    for dotted in ["2.5.4.3", "0.9.2342.19200300.100.1.25", "1.2.840.113549.1.9.1", "2.999.3", "1.39.0", "2.40.7"]:
        assert oid_text(oid_der(dotted)[2:]) == dotted


def test_an_empty_subject_is_empty_text() -> None:
    assert subject_name(mint(x509.Name([]))) == ""


def test_trustme_leaf_subject_and_the_raw_bytes_read_from_the_certificate() -> None:
    der = trustme_leaf(common_name="client one")
    certificate = x509.load_der_x509_certificate(der)
    assert subject_der(der) == certificate.subject.public_bytes()
    organization = certificate.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value
    unit = certificate.subject.get_attributes_for_oid(NameOID.ORGANIZATIONAL_UNIT_NAME)[0].value
    assert subject_name(der) == f"CN=client one,OU={escape_value(str(unit))},O={escape_value(str(organization))}"
    assert "\\#" in subject_name(der)  # trustme's OU is "Testing cert #..."


@pytest.mark.parametrize(
    "encoded",
    [
        b"",
        b"\x30",
        b"\x30\x05\x31\x00",  # runs past its container
        b"\x31\x00",  # not a SEQUENCE
        b"\x30\x00\x00",  # bytes after the Name
        b"\x30\x80\x00\x00",  # indefinite length
        b"\x30\x81\x00",  # long form for a short length
        b"\x30\x02\x31\x00",  # an empty RDN
        der_name([(CN, UTF8, b"x")])[:-1],
        tlv(0x30, tlv(0x31, tlv(0x30, oid_der(CN) + tlv(UTF8, b"x") + tlv(UTF8, b"y")))),  # three-field AVA
        tlv(0x30, tlv(0x31, tlv(0x30, tlv(UTF8, b"x") + tlv(UTF8, b"y")))),  # no OID
        tlv(0x30, tlv(0x31, tlv(0x31, oid_der(CN) + tlv(UTF8, b"x")))),  # AVA not a SEQUENCE
    ],
)
def test_malformed_names_are_refused(encoded: bytes) -> None:
    with pytest.raises(CertificateError):
        rfc2253_name(encoded)


def test_a_non_certificate_is_refused() -> None:
    with pytest.raises(CertificateError):
        subject_name(b"\x30\x03\x02\x01\x00")


_VALUES = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\r"), min_size=1, max_size=20)
_TYPES = st.sampled_from(
    [NameOID.COMMON_NAME, NameOID.ORGANIZATION_NAME, NameOID.ORGANIZATIONAL_UNIT_NAME, NameOID.LOCALITY_NAME]
)


@given(st.lists(st.lists(st.tuples(_TYPES, _VALUES), min_size=1, max_size=3, unique=True), min_size=1, max_size=4))
def test_printed_names_parse_back_to_the_same_name(rdns: list[list[tuple[x509.ObjectIdentifier, str]]]) -> None:
    # cryptography's RFC 4514 parser is an independent reader of the escaping (CR is left out: Java
    # escapes a leading or trailing one with a backslash, which RFC 4514 does not allow)
    subject = name(*rdns)
    printed = subject_name(mint(subject))
    parsed = x509.Name.from_rfc4514_string(printed)
    assert [sorted((a.oid.dotted_string, a.value) for a in rdn) for rdn in parsed.rdns] == [
        sorted((a.oid.dotted_string, a.value) for a in rdn) for rdn in subject.rdns
    ]
