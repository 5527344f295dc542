"""A connection's principal (controller/auth/principal.py), and the package's purity (architecture.md:
the authorizer is a pure function; the shell only establishes the principal)."""

from __future__ import annotations

import pytest
from cryptography.x509.oid import NameOID

from controller.auth.dn import CertificateError, subject_name
from controller.auth.principal import ANONYMOUS, principal_name
from controller.auth.principal_mapping import NoMatchingRule, parse_rules
from tests.test_rings import IMPURE, ROOT, files_of, forbidden, imported_modules

from .certs import mint, name, trustme_leaf


def test_no_certificate_is_anonymous() -> None:
    assert principal_name(None, parse_rules("")) == ANONYMOUS == "User:ANONYMOUS"


def test_default_rules_give_the_whole_dn() -> None:
    der = trustme_leaf(common_name="client-1")
    assert principal_name(der, parse_rules(None)) == f"User:{subject_name(der)}"
    assert principal_name(der, parse_rules(None)).startswith("User:CN=client-1,OU=Testing cert \\#")


def test_rules_map_the_dn_of_the_certificate() -> None:
    rules = parse_rules("RULE:^CN=([^,]+),OU=ServiceUsers.*$/$1/L, DEFAULT")
    service = mint(name([(NameOID.ORGANIZATIONAL_UNIT_NAME, "ServiceUsers")], [(NameOID.COMMON_NAME, "Reporter")]))
    assert principal_name(service, rules) == "User:reporter"
    other = mint(name([(NameOID.COMMON_NAME, "a+b")]))
    assert principal_name(other, rules) == "User:CN=a\\+b"


def test_a_dn_no_rule_maps_and_a_malformed_certificate_are_refused() -> None:
    with pytest.raises(NoMatchingRule):
        principal_name(trustme_leaf(), parse_rules("RULE:^CN=nobody$/x/"))
    with pytest.raises(CertificateError):
        principal_name(b"not a certificate", parse_rules(None))


def test_the_package_does_no_io_and_knows_nothing_of_the_shell() -> None:
    shell = {"controller.server", "controller.log", "controller.engine", "controller.control", "trio"}
    files = files_of(["controller/auth"])
    assert len(files) >= 6
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            module for module in imported_modules(path) if forbidden(module, IMPURE | shell)
        )
        for path in files
    }
    assert {path: bad for path, bad in offenders.items() if bad} == {}
