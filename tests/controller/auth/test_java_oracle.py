"""The JDK (17, installed on CI) as the oracle for what fencer reimplements of Java: the subject DN
of certificates and of hand-encoded names, the host text Kafka's ACLs compare, and java.util.regex's
matches + replaceAll that SslPrincipalMapper rules run. One JVM answers every question (module
fixture; the tests share one xdist worker)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from controller.auth.authorizer import java_host_address
from controller.auth.dn import rfc2253_name, subject_name
from controller.auth.principal_mapping import PrincipalMappingError, java_pattern, java_replace_all

from .certs import (
    BMP,
    EMAIL,
    GENERAL,
    IA5,
    INTEGER,
    PRINTABLE,
    SEQUENCE,
    T61,
    UTF8,
    der_name,
    mint,
    name,
    tlv,
    trustme_leaf,
)
from .java_oracle import ask_java, hexed

pytestmark = pytest.mark.xdist_group("auth-java-oracle")

CERTIFICATES = {
    "trustme": trustme_leaf(),
    "trustme-cn": trustme_leaf(common_name='alice, "the" <admin>; +1 = #1'),
    "specials": mint(name([(NameOID.COUNTRY_NAME, "US")], [(NameOID.COMMON_NAME, 'a,b+c"d;e<f>g\\h=i#j')])),
    "spaces": mint(name([(NameOID.ORGANIZATION_NAME, "  padded  ")], [(NameOID.COMMON_NAME, " ")])),
    "hash": mint(name([(NameOID.COMMON_NAME, "#leading")])),
    "utf8": mint(name([(NameOID.COMMON_NAME, "Ünïcödé 名前 😀 ﬀ")])),
    "multi-valued": mint(
        name([(NameOID.ORGANIZATION_NAME, "Org")], [(NameOID.COMMON_NAME, "bob"), (NameOID.USER_ID, "b1")])
    ),
    "email": mint(name([(EMAIL, "bob@example.com")], [(NameOID.COMMON_NAME, "bob")])),
    "keywords": mint(
        name(
            [(NameOID.DOMAIN_COMPONENT, "com")],
            [(NameOID.DOMAIN_COMPONENT, "example")],
            [(NameOID.COUNTRY_NAME, "DE")],
            [(NameOID.STATE_OR_PROVINCE_NAME, "Bayern")],
            [(NameOID.LOCALITY_NAME, "München")],
            [(NameOID.STREET_ADDRESS, "Hauptstr. 1")],
            [(NameOID.ORGANIZATIONAL_UNIT_NAME, "Ops")],
            [(NameOID.SERIAL_NUMBER, "42"), (NameOID.TITLE, "Dr")],
            [(NameOID.GIVEN_NAME, "Ada"), (NameOID.SURNAME, "Lovelace"), (NameOID.PSEUDONYM, "al")],
        )
    ),
    "empty": mint(x509.Name([])),
}

CN, ORG, OU, C, DC = "2.5.4.3", "2.5.4.10", "2.5.4.11", "2.5.4.6", "0.9.2342.19200300.100.1.25"
# truncated at the end, a bad continuation, overlong, past U+10FFFF, never-valid bytes
MALFORMED_UTF8 = [b"a\xc3", b"\xe2\x82", b"\xe2(", b"\xf0\x9f\x98", b"\xf0\x9f(", b"\xf0(", b"\xf0\x90", b"\xe0\xa0"]
MALFORMED_UTF8 += [b"\xc0\x80", b"\xe0\x80\x80", b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80"]
MALFORMED_UTF8 += [b"\xff\xfe"]
NAMES = {
    "bmp": der_name([(CN, BMP, "é".encode("utf-16-be"))]),
    "t61": der_name([(CN, T61, "é".encode("latin-1"))]),
    "general": der_name([(ORG, GENERAL, b"gen\xc3\xa9ral")]),
    "surrogate-utf8": der_name([(CN, UTF8, b"\xed\xa0\x80x")]),
    "overlong-utf8": der_name([(CN, UTF8, b"\xf0\x80\x80\x80y\xc3")]),
    "integer": der_name([(CN, INTEGER, b"\x05")]),
    "sequence": der_name([(ORG, SEQUENCE, tlv(UTF8, b"inner"))]),
    "unsorted-multi": der_name([(ORG, UTF8, b"zeta"), (CN, UTF8, b"alpha"), ("2.5.4.4", PRINTABLE, b"x")]),
    "cr-and-spaces": der_name([(CN, UTF8, b"\r a \r")]),
    "only-spaces": der_name([(CN, UTF8, b"   ")]),
    "nul": der_name([(CN, UTF8, b"a\x00b")]),
    "big-arcs": der_name([("2.999.3", UTF8, b"x")], [("1.3.6.1.4.1.99999.1", IA5, b"y")]),
    "long-value": der_name([(CN, UTF8, b"v" * 300)]),
    "empty-value": der_name([(CN, UTF8, b"")], [(ORG, PRINTABLE, b"")]),
    "empty": tlv(0x30, b""),
    "malformed-utf8": der_name(*[[(CN, UTF8, raw)] for raw in MALFORMED_UTF8]),
}

_TYPES = [UTF8, UTF8, UTF8, PRINTABLE, IA5, T61, BMP, GENERAL, INTEGER]
_OIDS = [
    CN,
    ORG,
    OU,
    C,
    DC,
    "2.5.4.8",
    "2.5.4.7",
    "2.5.4.9",
    "0.9.2342.19200300.100.1.1",
    "2.5.4.5",
    "1.2.840.113549.1.9.1",
]
_CHARS = ' ,=+<>#;"\\\r\n\t\0aZ9.-_é名😀'


def _random_value(rng: random.Random) -> bytes:
    if rng.random() < 0.3:
        return rng.randbytes(rng.randint(0, 6))  # anything, malformed UTF-8 included
    return "".join(rng.choice(_CHARS) for _ in range(rng.randint(0, 8))).encode()


def random_names(count: int, seed: int = 22) -> list[bytes]:
    rng = random.Random(seed)
    return [
        der_name(
            *[
                [
                    (rng.choice(_OIDS), rng.choice(_TYPES), _random_value(rng))
                    for _ in range(rng.choice([1, 1, 1, 2, 3]))
                ]
                for _ in range(rng.randint(0, 4))
            ]
        )
        for _ in range(count)
    ]


RANDOM_NAMES = random_names(300)

HOSTS = [
    "127.0.0.1",
    "10.20.30.40",
    "::1",
    "::",
    "1::",
    "2001:db8::1",
    "2001:DB8:0:0:8:800:200C:417A",
    "::ffff:10.0.0.1",
]
HOSTS += ["fe80::1:0:0:1", "0:0:0:0:0:0:0:1", "::1.2.3.4", "64:ff9b::192.0.2.33"]

# (pattern, replacement, input): Kafka's documented rules, and Java's find/replace corners
REGEXES = [
    ("^CN=(.*?),OU=ServiceUsers.*$", "$1", "CN=Duke,OU=ServiceUsers,O=Org,C=US"),
    ("^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$", "$1@$2", "CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US"),
    ("^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$", "$1", "cN=duke,OU=JavaSoft,O=Sun Microsystems"),
    ("^CN=((\\\\, *|\\w)+)(,.*|$)", "$1", "CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz"),
    ("(.*?)", "x", "ab"),
    (".*", "[$0]", "abc"),
    ("x*", "-", ""),
    ("(a)|b", "<$1>", "b"),
    ("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)", "$10-$11-$1", "abcdefghij"),
    ("(?<user>[a-z]+)@(?<realm>[a-z]+)", "${realm}\\\\${user}", "bob@corp"),
    ("(?<u>[a-z]+)", "${nope}", "bob"),
    ("(a)", "$2", "a"),
    ("(a)", "$", "a"),
    ("(a)", "\\", "a"),
    ("(a)", "$x", "a"),
    ("(a)", "\\$1 costs $1", "a"),
    ("\\QCN=a.b\\E(.*)", "$1", "CN=a.b,rest"),
    ("CN=(\\w+)\\z", "$1", "CN=abc"),
    ("(?i)cn=(\\w+)", "$1", "CN=Mixed"),
    ("CN=(\\d+)", "$1", "CN=١٢٣"),
    ("(a|ab)(c|bcd)(d*)", "$3$2$1", "abcd"),
    ("[^,]+(,[^,]+)*", "#", "a,b,c"),
    ("(?:CN=)?([^,]*+),.*", "$1", "CN=poss,ive"),
    ("(?>a+)b", "ok", "aaab"),
    ("\\bCN=(\\w+)\\b.*", "$1", "CN=word,x"),
    ("(.)\\1", "$1", "zz"),
    ("(?<c>.)\\k<c>", "${c}", "yy"),
    ("é+(.)", "$1", "ééx"),
]


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    questions = [f"cert {der.hex()}" for der in CERTIFICATES.values()]
    questions += [f"name {der.hex()}" for der in [*NAMES.values(), *RANDOM_NAMES]]
    questions += [f"host {hexed(host)}" for host in HOSTS]
    questions += [f"regex {hexed(p)} {hexed(r)} {hexed(i)}" for p, r, i in REGEXES]
    return dict(zip(questions, ask_java(questions, Path(tmp_path_factory.mktemp("java"))), strict=True))


@pytest.mark.parametrize("case", CERTIFICATES)
def test_certificate_subjects_print_as_java_prints_them(java: dict[str, str], case: str) -> None:
    der = CERTIFICATES[case]
    assert subject_name(der) == java[f"cert {der.hex()}"]


@pytest.mark.parametrize("case", NAMES)
def test_hand_encoded_names_print_as_java_prints_them(java: dict[str, str], case: str) -> None:
    der = NAMES[case]
    assert rfc2253_name(der) == java[f"name {der.hex()}"]


def test_random_names_print_as_java_prints_them(java: dict[str, str]) -> None:
    differ = [(der.hex(), rfc2253_name(der), java[f"name {der.hex()}"]) for der in RANDOM_NAMES]
    assert [case for case in differ if case[1] != case[2]] == []


@pytest.mark.parametrize("host", HOSTS)
def test_host_addresses_are_java_text(java: dict[str, str], host: str) -> None:
    assert java_host_address(host) == java[f"host {hexed(host)}"]


def _fencer_regex(pattern: str, replacement: str, text: str) -> str:
    compiled = java_pattern(pattern)
    if compiled.fullmatch(text) is None:
        return "NOMATCH"
    try:
        return java_replace_all(compiled, text, replacement)
    except PrincipalMappingError as error:
        return f"ERR {error}"


@pytest.mark.parametrize(("pattern", "replacement", "text"), REGEXES)
def test_regex_matches_and_replace_all_as_java(java: dict[str, str], pattern: str, replacement: str, text: str) -> None:
    expected = java[f"regex {hexed(pattern)} {hexed(replacement)} {hexed(text)}"]
    if expected.startswith("ERR "):  # the same message; the exception class is Java's
        expected = "ERR " + expected.split(": ", 1)[1]
    assert _fencer_regex(pattern, replacement, text) == expected
