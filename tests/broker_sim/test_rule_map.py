"""The rule map (broker_sim/rule_map/) is true and complete: every probe and check it names exists
in the fleet, every rule of docs/semantics.md has an entry quoting it, every decision of
docs/controller/decisions.md has an entry of its anchor's id (and every such entry an anchor), every
entry has a probe, a check or a reason the fleet cannot reach it, and the docs' rule-map page is the
map's. Pure and cheap: no fleet runs."""

from __future__ import annotations

import hashlib
import importlib
import inspect
from pathlib import Path

import pytest

from broker_sim import journal, rule_map
from broker_sim.check.violations import RULES
from broker_sim.model import stale
from broker_sim.model.probe_kinds import PROBE_KINDS
from broker_sim.rule_map import RULE_MAP, Rule
from broker_sim.rule_map.page import PAGE_PATH, render_page

from . import rule_sources
from .rule_sources import Enumerated

ROOT = Path(__file__).resolve().parents[2]
SHARED_SEMANTICS = ROOT.parent / "shared" / "docs" / "semantics.md"
SEMANTICS = rule_map.SEMANTICS_PATH.read_text()
DECISIONS_PAGE = rule_map.DECISIONS_PATH.read_text()
ENUMERATED = rule_sources.semantics_rules(SEMANTICS)
#: the entries tied to the spec by a quote, and those tied to the decisions page by their id
QUOTED = tuple(r for r in RULE_MAP if r.section != rule_map.DECISIONS)
DECIDED = tuple(r for r in RULE_MAP if r.section == rule_map.DECISIONS)


def test_the_vendored_semantics_is_the_one_the_map_was_made_from() -> None:
    """docs/semantics.md is pinned by its digest (a changed copy is a conscious update of the map,
    wherever the suite runs); beside ../shared (this project's work tree) it is also compared with
    the shared one byte for byte, so that a new version there is noticed."""
    vendored = rule_map.SEMANTICS_PATH.read_bytes()
    assert hashlib.sha256(vendored).hexdigest() == rule_map.SEMANTICS_SHA256
    if SHARED_SEMANTICS.exists():
        assert vendored == SHARED_SEMANTICS.read_bytes()


# ------------------------------------------------------------------ (1) what the map names exists
def test_every_check_the_map_names_is_a_rule_of_the_checker() -> None:
    assert [(r.id, c) for r in RULE_MAP for c in r.checks if c not in RULES] == []


def test_every_probe_the_map_names_is_a_kind_the_fleet_sends() -> None:
    assert [(r.id, p) for r in RULE_MAP for p in r.probes if p not in PROBE_KINDS] == []


@pytest.mark.parametrize("name", sorted(PROBE_KINDS))
def test_every_probe_kind_is_built_by_the_fleet_and_named_as_its_journal_names_it(name: str) -> None:
    kind = PROBE_KINDS[name]
    module_name, qualname = kind.witness.split(":")
    target: object = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    assert kind.literal in inspect.getsource(target)  # type: ignore[arg-type]
    journal_kind, reason, *api = name.split(":")
    assert journal_kind in journal.ENTRY_TYPES
    if journal_kind == journal.StaleReplay.kind:
        assert reason in (stale.PREVIOUS_INCARNATION, stale.OLD_LEADER_EPOCH, stale.OLD_PARTITION_EPOCH)
        assert api == [] or reason == stale.PREVIOUS_INCARNATION


# ------------------------------------------------------------------ (2) every entry is covered or out of reach
def test_ids_are_unique_and_an_entry_out_of_reach_claims_nothing() -> None:
    ids = [r.id for r in RULE_MAP]
    assert len(ids) == len(set(ids))
    assert [r.id for r in RULE_MAP if r.reach and (r.probes or r.checks or r.unseen)] == []


def test_every_entry_has_a_probe_a_check_or_a_reason_it_is_out_of_reach() -> None:
    assert [r.id for r in RULE_MAP if r.gap] == []


# ------------------------------------------------------------------ (3) complete against the rules
def test_the_rules_are_enumerated_from_every_section() -> None:
    sections = {e.section for e in ENUMERATED}
    headings = {line[3:] for line in SEMANTICS.splitlines() if line.startswith("## ")}
    assert sections == headings
    rows = [e.text for e in ENUMERATED if e.text[:4] in {f"{c} | " for c in "abcdefgh"}]
    assert len(rows) == 8  # AlterPartition's table, a-h


def test_every_quote_names_exactly_one_rule_of_its_section() -> None:
    assert [r.id for r in QUOTED if not r.quote] == [] and [r.id for r in DECIDED if r.quote] == []
    counts = {r.id: len(rule_sources.claims(r, ENUMERATED)) for r in QUOTED}
    assert {rule: count for rule, count in counts.items() if count != 1} == {}


def test_every_enumerated_rule_has_an_entry() -> None:
    assert [f"{e.section}: {e.text}" for e in rule_sources.unclaimed(QUOTED, ENUMERATED)] == []


def test_every_decision_has_an_entry_of_its_anchor_and_every_entry_an_anchor() -> None:
    anchors = rule_sources.decision_anchors(DECISIONS_PAGE)
    assert len(anchors) > 20 and [number for number, ids in enumerate(anchors) if not ids] == []
    on_page = [anchor for ids in anchors for anchor in ids]
    assert sorted(on_page) == sorted({r.id for r in DECIDED})


def test_a_decision_without_an_anchor_or_an_entry_without_one_is_caught() -> None:
    unanchored = DECISIONS_PAGE.replace('<a id="decides.heartbeat-deadline"></a>', "", 1)
    anchors = rule_sources.decision_anchors(unanchored)
    assert [] in anchors
    assert "decides.heartbeat-deadline" not in {a for ids in anchors for a in ids}


def test_a_new_rule_or_a_dropped_entry_is_caught() -> None:
    grown = SEMANTICS.replace(
        "- A rejected request writes nothing.",
        "- A rejected request writes nothing. A new rule nobody mapped → SOME_ERROR.",
    )
    enumerated = rule_sources.semantics_rules(grown)
    assert rule_sources.unclaimed(QUOTED, enumerated) == [
        Enumerated("State and the log", "A new rule nobody mapped → SOME_ERROR.")
    ]
    dropped = tuple(r for r in QUOTED if r.id != "alter-partition.h")
    assert [e.text[:1] for e in rule_sources.unclaimed(dropped, ENUMERATED)] == ["h"]


def test_the_enumeration_reads_items_sentences_steps_and_rows() -> None:
    text = "\n".join(
        [
            "# Title",
            "Preamble. Not a rule.",
            "",
            "## One",
            "- First. Second (x.y) ends",
            "  here. third stays.",
            "Top level:",
            "1. Step one. 2. Step two.",
            "| # | a | b |",
            "|---|---|---|",
            "| a | cond | ERR |",
        ]
    )
    assert [e.text for e in rule_sources.semantics_rules(text)] == [
        "First.",
        "Second (x.y) ends here. third stays.",
        "Step one.",
        "Step two.",
        "a | cond | ERR",
    ]


# ------------------------------------------------------------------ the docs' page is the map's
def test_the_page_is_the_map() -> None:
    assert PAGE_PATH.read_text() == render_page(RULE_MAP), "run: python -m docgen --write"


def test_the_table_says_what_each_entry_has() -> None:
    rules = (
        Rule("x.gap", "S", "a gap", quote="q"),
        Rule("x.out", "S", "far", reach="no way", quote="q"),
        Rule("x.both", "S", "seen", probes=("p",), checks=("c",), unseen="part", quote="q"),
        Rule("decides.x", rule_map.DECISIONS, "decided", checks=("c",)),
    )
    table = render_page(rules)
    assert (
        "4 rules: 1 provoked by a probe, 2 seen by a check (1 both), 1 out of the fleet's reach, "
        "1 with none yet (x.gap)."
    ) in table.splitlines()
    assert "| `x.gap` | a gap | **none yet** | **none yet** |" in table
    assert "| `x.out` | far | out of reach | no way |" in table
    assert "| `x.both` | seen (not seen yet: part) | `p` | `c` |" in table
    assert "| [`decides.x`](../controller/decisions.md#decides.x) | decided | - | `c` |" in table


def test_every_probe_the_fleet_sends_is_named_for_a_rule_or_said_to_have_none() -> None:
    named = {p for r in RULE_MAP for p in r.probes}
    assert sorted(set(PROBE_KINDS) - named - set(rule_map.UNSTATED_PROBES)) == []
    assert sorted(named & set(rule_map.UNSTATED_PROBES)) == []
    assert sorted(set(rule_map.UNSTATED_PROBES) - set(PROBE_KINDS)) == []
