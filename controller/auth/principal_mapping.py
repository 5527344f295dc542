"""`ssl.principal.mapping.rules`: Kafka's SslPrincipalMapper, from a certificate's DN to a user name.

Rules (Kafka 3.9 SslPrincipalMapper, java.util.regex semantics):
- The text (None means "DEFAULT", Kafka's default) is trimmed as Java's String.trim and split into
  a comma-separated list of rules, each `DEFAULT` or `RULE:pattern/replacement/` optionally
  followed by `L` (lower-case the result) or `U` (upper-case it). In pattern and replacement a
  '\\' escapes the next character, so `\\/` and `\\,` stay inside them; empty rules are skipped; a
  rule with anything else is refused (`MappingRulesError`, with Kafka's message and a hint).
  "" has no rule at all, so every DN is refused.
- The first rule that applies wins: DEFAULT gives the DN unchanged; RULE applies when its
  pattern matches the whole DN, and gives `dn.replaceAll(pattern, replacement)` (every match,
  Java's way: after an empty match the search moves one char on), then L or U (str.lower/upper,
  Unicode's full mappings, as String.toLowerCase/toUpperCase(Locale.ENGLISH)).
- Replacements are Java's: `$n` a group (further digits taken while the number stays a group),
  `${name}` a named group, `\\x` the char x, an unmatched group nothing. Before that, as Kafka
  does (escapeLiteralBackReferences), a `$n` naming a group the pattern does not have is made
  literal, its number first cut down a digit at a time while it is 10 or more.
  A replacement Java refuses (a lone '$' or trailing '\\', ...) fails the rule when it applies
  (`PrincipalMappingError`), as in Kafka, where the connection then fails.
- No rule applying is `NoMatchingRule` (Kafka refuses the connection).
- Patterns are Java regular expressions run by Python's re (ASCII classes and case folding, as
  Java's defaults). Translated: `\\Q...\\E`, `(?<name>`, `\\k<name>`, `\\z`, `\\Z`, `\\e`.
  Refused when parsed, with a clear message: what re reads otherwise or not at all (`\\p{..}`,
  `\\h`, `\\v`, `\\R`, `\\X`, `\\G`, `\\c`, nested classes, `&&` intersections, `(?P`).
  Known difference: Java's '.' and '$' also treat \\r, U+0085, U+2028 and U+2029 as line ends.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ._java import java_trim

_DOT = "[^\n\r\u0085\u2028\u2029]"  # Java's '.'
_END = "(?=(?:\r\n|[\n\r\u0085\u2028\u2029])?\\Z)"  # Java's '$'
_RULE = rf"(DEFAULT)|RULE:((\\{_DOT}|[^\\/])*)/((\\{_DOT}|[^\\/])*)/([LU]?){_DOT}*?|({_DOT}*?)"
_SPLITTER = re.compile(rf"\s*({_RULE})\s*(,\s*|{_END})", re.ASCII)
_PARSER = re.compile(_RULE, re.ASCII)
_BACK_REFERENCE = re.compile(r"\$([0-9]+)")
_HINT = "(a rule is DEFAULT or RULE:pattern/replacement/ with an optional L or U after the last '/')"
_REFUSED_ESCAPES = {
    "p": "Unicode classes \\p{..}",
    "P": "Unicode classes \\P{..}",
    "h": "\\h",
    "H": "\\H",
    "v": "\\v (vertical whitespace in Java)",
    "V": "\\V",
    "R": "\\R",
    "X": "\\X",
    "G": "\\G",
    "c": "control escapes \\cX",
}
_TRANSLATED_ESCAPES = {"z": "\\Z", "Z": _END, "e": "\\x1b"}


class MappingRulesError(ValueError):
    """The rules text is not valid."""


class PrincipalMappingError(Exception):
    """A DN could not be mapped to a name (the connection is refused)."""


class NoMatchingRule(PrincipalMappingError):
    """No rule applies to the DN."""


def _java_find_all(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """Matcher.find() repeated: after an empty match the next search starts one char later."""
    pos = 0
    while pos <= len(text):
        match = pattern.search(text, pos)
        if match is None:
            return
        yield match
        pos = match.end() + 1 if match.end() == match.start() else match.end()


def _translate_escape(pattern: str, index: int) -> tuple[str, int]:
    """The Python text for the escape at pattern[index] == '\\', and the index after it."""
    char = pattern[index + 1] if index + 1 < len(pattern) else ""
    if char == "Q":
        end = pattern.find("\\E", index + 2)
        literal = pattern[index + 2 :] if end < 0 else pattern[index + 2 : end]
        return re.escape(literal), len(pattern) if end < 0 else end + 2
    if char in _REFUSED_ESCAPES:
        raise MappingRulesError(f"{_REFUSED_ESCAPES[char]} in pattern `{pattern}` are not supported")
    if char in _TRANSLATED_ESCAPES:
        return _TRANSLATED_ESCAPES[char], index + 2
    if char == "k" and pattern.startswith("<", index + 2):
        end = pattern.find(">", index + 3)
        if end > 0:
            return f"(?P={pattern[index + 3 : end]})", end + 1
    return pattern[index : index + 2], index + 2


def java_pattern(pattern: str) -> re.Pattern[str]:
    """A Java regular expression compiled by Python's re (see the module's rules)."""
    out: list[str] = []
    index, in_class, class_start = 0, False, 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            text, index = _translate_escape(pattern, index)
            out.append(text)
            continue
        if in_class:
            if char == "[" or pattern.startswith("&&", index):
                raise MappingRulesError(f"nested classes and && in pattern `{pattern}` are not supported")
            in_class = not (char == "]" and index > class_start)
        elif char == "[":
            in_class = True
            class_start = index + (2 if pattern.startswith("^", index + 1) else 1)
        elif pattern.startswith("(?P", index):
            raise MappingRulesError(f"Python's (?P...) in pattern `{pattern}` is not Java syntax")
        elif pattern.startswith("(?<", index) and not pattern.startswith(("(?<=", "(?<!"), index):
            out.append("(?P<")
            index += 3
            continue
        out.append(char)
        index += 1
    try:
        return re.compile("".join(out), re.ASCII)
    except re.error as error:
        raise MappingRulesError(f"pattern `{pattern}` is not a regular expression fencer can run: {error}") from None


def escape_literal_back_references(replacement: str, group_count: int) -> str:
    """Kafka's escapeLiteralBackReferences, quirks kept: it scans the original text, and inserts at
    offsets of the original text into the growing result."""
    if group_count == 0:
        return replacement
    value = replacement
    for match in _BACK_REFERENCE.finditer(replacement):
        digits = match.group(1)
        if digits.startswith("0"):
            continue
        number = int(digits)
        if number > 2**31 - 1:
            raise PrincipalMappingError(f'For input string: "{digits}"')
        while number > group_count and number >= 10:
            number //= 10
        if number > group_count:
            at = match.start(1) - 1
            value = value[:at] + "\\" + value[at:]
    return value


def _group_reference(replacement: str, cursor: int, match: re.Match[str]) -> tuple[int | str, int]:
    """The group a '$' at replacement[cursor - 1] names, and the cursor after it (Java's rules)."""
    if cursor == len(replacement):
        raise PrincipalMappingError("Illegal group reference: group index is missing")
    if replacement[cursor] == "{":
        end = cursor + 1
        while end < len(replacement) and replacement[end].isascii() and replacement[end].isalnum():
            end += 1
        name = replacement[cursor + 1 : end]
        if not name:
            raise PrincipalMappingError("named capturing group has 0 length name")
        if end == len(replacement) or replacement[end] != "}":
            raise PrincipalMappingError("named capturing group is missing trailing '}'")
        if name[0].isdigit():
            raise PrincipalMappingError(f"capturing group name {{{name}}} starts with digit character")
        if name not in match.re.groupindex:
            raise PrincipalMappingError(f"No group with name {{{name}}}")
        return name, end + 1
    if not "0" <= replacement[cursor] <= "9":
        raise PrincipalMappingError("Illegal group reference")
    number, cursor = int(replacement[cursor]), cursor + 1
    while cursor < len(replacement) and "0" <= replacement[cursor] <= "9":
        longer = number * 10 + int(replacement[cursor])
        if longer > match.re.groups:
            break
        number, cursor = longer, cursor + 1
    if number > match.re.groups:
        raise PrincipalMappingError(f"No group {number}")
    return number, cursor


def expand_replacement(replacement: str, match: re.Match[str]) -> str:
    """Java's Matcher.appendReplacement expansion of `replacement` for `match`."""
    out: list[str] = []
    cursor = 0
    while cursor < len(replacement):
        char = replacement[cursor]
        if char == "\\":
            if cursor + 1 == len(replacement):
                raise PrincipalMappingError("character to be escaped is missing")
            out.append(replacement[cursor + 1])
            cursor += 2
        elif char == "$":
            group, cursor = _group_reference(replacement, cursor + 1, match)
            out.append(match.group(group) or "")
        else:
            out.append(char)
            cursor += 1
    return "".join(out)


def java_replace_all(pattern: re.Pattern[str], text: str, replacement: str) -> str:
    """String.replaceAll(pattern, replacement)."""
    out: list[str] = []
    last = 0
    for match in _java_find_all(pattern, text):
        out.append(text[last : match.start()])
        out.append(expand_replacement(replacement, match))
        last = match.end()
    out.append(text[last:])
    return "".join(out)


@dataclass(frozen=True, slots=True)
class MappingRule:
    """DEFAULT (pattern None) or RULE:pattern/replacement/ with case "", "L" or "U"."""

    pattern: str | None = None
    replacement: str = ""
    case: str = ""
    compiled: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        """As Kafka's Rule.toString."""
        if self.pattern is None:
            return "DEFAULT"
        return f"RULE:{self.pattern}/{self.replacement}" + (f"/{self.case}" if self.case else "")

    def apply(self, dn: str) -> str | None:
        """The name this rule maps `dn` to, or None when it does not apply."""
        if self.pattern is None:
            return dn
        compiled = self.compiled or java_pattern(self.pattern)
        if compiled.fullmatch(dn) is None:
            return None
        name = java_replace_all(compiled, dn, escape_literal_back_references(self.replacement, compiled.groups))
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


@dataclass(frozen=True, slots=True)
class PrincipalMappingRules:
    rules: tuple[MappingRule, ...]

    def __str__(self) -> str:
        """As Kafka's List.toString of the rules: "[RULE:..., DEFAULT]"."""
        return "[" + ", ".join(str(rule) for rule in self.rules) + "]"

    def map(self, dn: str) -> str:
        """The user name for `dn` (SslPrincipalMapper.getName); NoMatchingRule when no rule applies."""
        for rule in self.rules:
            name = rule.apply(dn)
            if name is not None:
                return name
        raise NoMatchingRule(f"No rules apply to {dn}, rules {self}")


def _parse_rule(text: str) -> MappingRule | None:
    match = _PARSER.match(text)
    if match is None or match.end() != len(text):
        rest = text if match is None else text[match.end() :]
        raise MappingRulesError(f"Invalid rule: `{text}`, unmatched substring: `{rest}` {_HINT}")
    if match.group(1) is not None:
        return MappingRule()
    if match.group(2) is None:
        return None  # an empty rule
    return MappingRule(match.group(2), match.group(4), match.group(6), java_pattern(match.group(2)))


def parse_rules(text: str | None) -> PrincipalMappingRules:
    """Rules from `ssl.principal.mapping.rules` text (None: "DEFAULT"); MappingRulesError if invalid."""
    pieces = [match.group(1) for match in _java_find_all(_SPLITTER, java_trim("DEFAULT" if text is None else text))]
    rules = (_parse_rule(piece) for piece in pieces)
    return PrincipalMappingRules(tuple(rule for rule in rules if rule is not None))
