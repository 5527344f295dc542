"""The rules of docs/semantics.md, enumerated for the rule map's tests, and the anchors of the
controller's decisions page.

The spec is read mechanically so that a new rule cannot be missed: its sections (`## `) after the
title's preamble are read as items: a bullet (`- `), a numbered step (`1. `), a table row (header
and separator skipped) or a paragraph; an item's continuation lines are the lines up to a blank line
or the next item. A table row is one rule; any other item is split into sentences (after a `.`
followed by whitespace and a capital or digit; a step number opening a sentence is dropped), and
each sentence is one rule. A sentence that is only a label (it ends with `:` and has at most three
words, "Top level:") is none. An entry of the map stands for the rules of its section whose text
(whitespace collapsed) holds its `quote`; a quote must name exactly one rule.

The decisions page is read for its anchors only (`<a id="...">` on each bullet): its wording is free.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from broker_sim.rule_map import Rule


@dataclass(frozen=True, slots=True)
class Enumerated:
    """One rule of the sources: its section and its text (whitespace collapsed)."""

    section: str
    text: str


_STEP = re.compile(r"^\d+\.\s+")
_INLINE_STEP = re.compile(r"(?<=\.\s)\d+\.\s+")
_SENTENCE_END = re.compile(r"(?<=\.)\s+(?=[A-Z0-9])")


def _sentences(text: str) -> list[str]:
    out = []
    for sentence in _SENTENCE_END.split(_INLINE_STEP.sub("", _STEP.sub("", text))):
        sentence = sentence.strip()
        if sentence and not (sentence.endswith(":") and len(sentence.split()) <= 3):
            out.append(sentence)
    return out


def semantics_rules(text: str) -> list[Enumerated]:
    """The rules of semantics.md (see the module rules): sentences of items, and table rows."""
    rules: list[Enumerated] = []
    section: str | None = None
    item: list[str] = []
    in_table = False

    def flush() -> None:
        if item and section is not None:
            rules.extend(Enumerated(section, s) for s in _sentences(" ".join(item)))
        item.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if line.startswith("#"):
            flush()
            section = stripped.lstrip("#").strip() if line.startswith("## ") else None
            in_table = False
        elif not stripped:
            flush()
            in_table = False
        elif stripped.startswith("|"):
            flush()
            cells = [cell.strip() for cell in stripped.strip("|").split("|")]
            if in_table and section is not None and not all(set(cell) <= set("-: ") for cell in cells):
                rules.append(Enumerated(section, " | ".join(cells)))
            in_table = True  # the first row of a table is its header
        else:
            in_table = False
            if stripped.startswith("- ") or _STEP.match(stripped):
                flush()
                stripped = stripped.removeprefix("- ")
            item.append(stripped)
    flush()
    return rules


def normalized(text: str) -> str:
    return " ".join(text.split())


def claims(rule: Rule, enumerated: Sequence[Enumerated]) -> list[Enumerated]:
    """The enumerated rules `rule` stands for: those of its section whose text holds its quote."""
    quote = normalized(rule.quote)
    return [e for e in enumerated if e.section == rule.section and quote in normalized(e.text)]


def unclaimed(rules: Iterable[Rule], enumerated: Sequence[Enumerated]) -> list[Enumerated]:
    """The enumerated rules no entry of the map stands for."""
    claimed = {e for rule in rules for e in claims(rule, enumerated)}
    return [e for e in enumerated if e not in claimed]


_ANCHOR = re.compile(r'<a id="([^"]+)"></a>')


def decision_anchors(page: str) -> list[list[str]]:
    """The anchors of each top-level bullet of the decisions page, in order."""
    return [_ANCHOR.findall(line) for line in page.splitlines() if line.startswith("- ")]
