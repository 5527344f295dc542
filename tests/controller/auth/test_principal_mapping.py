"""ssl.principal.mapping.rules (controller/auth/principal_mapping.py): Kafka's SslPrincipalMapperTest
and documentation examples, Kafka's back-reference escaping, and the Java regex dialect's edges.
(java.util.regex itself is the oracle for matches/replaceAll in test_java_oracle.py.)"""

from __future__ import annotations

import pytest

from controller.auth.principal_mapping import (
    MappingRulesError,
    NoMatchingRule,
    PrincipalMappingError,
    escape_literal_back_references,
    java_pattern,
    parse_rules,
)


@pytest.mark.parametrize(
    "rules",
    [
        "DEFAULT",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
        "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    ],
)
def test_valid_rules(rules: str) -> None:
    assert parse_rules(rules).rules


@pytest.mark.parametrize(
    ("rules", "unmatched"),
    [
        ("default", "default"),
        ("DEFAUL", "DEFAUL"),
        ("DEFAULT/L", "/L"),
        ("DEFAULT/U", "/U"),
        ("RULE:CN=(.*?),OU=ServiceUsers.*/$1", "RULE:CN=(.*?)"),
        ("rule:^CN=(.*?),OU=ServiceUsers.*$/$1/", "rule:^CN=(.*?)"),
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U", "/U"),
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/L", "RULE:^CN=(.*?)"),
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/U", "RULE:^CN=(.*?)"),
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/LU", "RULE:^CN=(.*?)"),
    ],
)
def test_invalid_rules_say_what_is_left_over(rules: str, unmatched: str) -> None:
    with pytest.raises(MappingRulesError, match=r"Invalid rule: `.*`, unmatched substring: `(.*)`") as refused:
        parse_rules(rules)
    assert f"unmatched substring: `{unmatched}`" in str(refused.value)
    assert "RULE:pattern/replacement/" in str(refused.value)


def test_kafkas_mapper_examples() -> None:
    rules = parse_rules(
        ", ".join(
            [
                "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
                "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
                "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
                "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
                "DEFAULT",
            ]
        )
    )
    assert rules.map("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "duke"
    assert rules.map("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert rules.map("cn=duke,ou=sme,dc=mycp,dc=com") == "DUKE@SME"
    assert rules.map("cN=duke,OU=JavaSoft,O=Sun Microsystems") == "DUKE"
    assert rules.map("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"


def test_the_documentation_example_one_rule_a_line() -> None:
    rules = parse_rules(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,\n"
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,\n"
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,\n"
        "DEFAULT"
    )
    assert rules.map("CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown") == "serviceuser"
    assert rules.map("CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown") == "adminuser@admin"


@pytest.mark.parametrize(
    ("expected", "rules"),
    [
        ("[]", ""),
        ("[DEFAULT]", "DEFAULT"),
        ("[DEFAULT]", None),
        ("[RULE:/]", "RULE://"),
        ("[RULE:/.*]", "RULE:/.*/"),
        ("[RULE:/.*/L]", "RULE:/.*/L"),
        ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
        ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
        ("[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "),
        ("[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "),
        ("[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]", "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  "),
        ("[]", ",   , , ,      , , ,   "),
        ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
        ("[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "),
        ("[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"),
        ("[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]", "RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//"),
        ("[RULE:\\**\\/+/*/L, RULE:\\/*\\**/**]", "RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/"),
        (
            "[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
            "RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT",
        ),
    ],
)
def test_rules_splitting_as_kafka(expected: str, rules: str | None) -> None:
    assert str(parse_rules(rules)) == expected


def test_comma_with_whitespace() -> None:
    rules = parse_rules("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert rules.map("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"


def test_no_rule_applying_refuses_the_dn() -> None:
    rules = parse_rules("RULE:^CN=([a-z]+)$/$1/")
    assert rules.map("CN=alice") == "alice"
    with pytest.raises(
        NoMatchingRule, match=r"^No rules apply to CN=Alice,O=x, rules \[RULE:\^CN=\(\[a-z\]\+\)\$/\$1\]$"
    ):
        rules.map("CN=Alice,O=x")
    with pytest.raises(NoMatchingRule):
        parse_rules("").map("CN=anyone")


def test_the_first_applying_rule_wins_and_default_keeps_the_dn() -> None:
    rules = parse_rules("RULE:^CN=(.*),O=a$/a-$1/, RULE:^CN=(.*),O=.*$/any-$1/U, DEFAULT")
    assert [rules.map(dn) for dn in ["CN=x,O=a", "CN=x,O=b", "OU=y"]] == ["a-x", "ANY-X", "OU=y"]


@pytest.mark.parametrize(
    ("replacement", "groups", "escaped"),
    [
        ("$1@$4", 3, "$1@\\$4"),
        ("$1@$2", 2, "$1@$2"),
        ("$12", 1, "$12"),  # cut down to $1: a group (the 2 then reads as a literal)
        ("$123", 12, "$123"),
        ("$9", 0, "$9"),  # no groups: left alone
        ("$0", 1, "$0"),
        ("$05", 1, "$05"),
        ("$5$6", 1, "\\$\\5$6"),  # Kafka's offsets drift after the first insertion
    ],
)
def test_escape_literal_back_references(replacement: str, groups: int, escaped: str) -> None:
    assert escape_literal_back_references(replacement, groups) == escaped


def test_replacements_with_missing_groups_and_kafkas_drift() -> None:
    assert parse_rules("RULE:^CN=(.*)$/$1@$4/").map("CN=bob") == "bob@$4"
    assert parse_rules("RULE:^CN=(.)$/$12/").map("CN=b") == "b2"
    with pytest.raises(PrincipalMappingError, match=r"^No group 6$"):
        parse_rules("RULE:^(a)$/$5$6/").map("a")
    with pytest.raises(PrincipalMappingError, match=r"^No group 1$"):
        parse_rules("RULE:^CN=.*$/$1/").map("CN=x")  # no group at all: Kafka escapes nothing


def test_replacement_errors_fail_the_rule_when_it_applies_not_when_parsed() -> None:
    for broken in ["RULE:^(a)$/$/", "RULE:^(a)$/$x/", "RULE:^(a)$/${}/", "RULE:^(a)$/${b}/"]:
        rules = parse_rules(broken)
        with pytest.raises(PrincipalMappingError):
            rules.map("a")
        with pytest.raises(NoMatchingRule):
            rules.map("b")


def test_java_regex_syntax_is_translated_or_refused_clearly() -> None:
    assert parse_rules("RULE:^\\QCN=a.b\\E(.*)$/$1/").map("CN=a.b,c") == ",c"
    assert parse_rules("RULE:^CN=(?<user>[^,]+).*$/${user}/").map("CN=kim,O=x") == "kim"
    assert java_pattern("CN=(\\w+)\\z").fullmatch("CN=abc") is not None
    assert java_pattern("(\\d+)").fullmatch("١٢٣") is None  # ASCII classes, as Java's
    for refused in ["\\p{Lower}+", "[a-z&&[^b]]", "[[a]]", "\\h", "\\R", "(?P<x>a)", "(unclosed"]:
        with pytest.raises(MappingRulesError, match=r"pattern `.*`"):
            parse_rules(f"RULE:{refused}/x/")
