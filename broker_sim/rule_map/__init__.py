"""The rule map: every rule the controller must follow, and what of the fleet provokes it or sees it broken.

Purpose: the fleet is worth the bugs it finds, and a rule nothing provokes and nothing checks is a
bug it cannot find. This package is the one list of the rules, each with the fleet's probes that
provoke it (requests a correct controller must refuse, journalled and judged) and the checker's
rules that would see it broken, or why the fleet cannot reach it. The docs' page
docs/fleet/rule-map.md is generated from it (`page.py`, written by `python -m docgen --write`);
nothing here reads a page.

Where the rules come from:
- `docs/semantics.md`, a byte-for-byte copy of `../shared/docs/semantics.md` (a clean clone has no
  ../shared; the copy is pinned by its digest, `SEMANTICS_SHA256`): each sentence and table row is a
  rule, and each is stood for by an entry whose `quote` is a verbatim phrase of it
  (tests/broker_sim/rule_sources.py enumerates them; tests/broker_sim/test_rule_map.py fails for a
  rule no entry quotes, so a new or reworded rule of the spec cannot be missed);
- the controller's own decisions, where semantics.md is silent (`decisions.py`): each entry's id is
  the anchor of the bullet of docs/controller/decisions.md that states it (the test holds the page's
  anchors to the entries, both ways).

What an entry may claim:
- `probes`: names of `broker_sim.model.probe_kinds.PROBE_KINDS` (kinds the fleet sends).
- `checks`: names of `broker_sim.check.violations.RULES` (rules the checker reports), named only
  where something the fleet does in a run reaches the decision: a check that would see a broken
  rule nothing in a run provokes is no coverage, so such a rule is a gap.
- `reach`: why neither the fleet nor the checker can reach the rule (the fleet's brokers are
  always authorised; a value no broker sends, only a hand-made frame carries; a feature fencer
  does not have), with the tests that cover it instead.
- `unseen`: the part of a covered rule that nothing sees yet (partial coverage, said openly).
- An entry with none of the three is a gap: the page says "none yet" and the test fails for it.
- The other way round, every probe kind the fleet sends is named for a rule, or listed in
  `UNSTATED_PROBES` with the rule the sources lack (the page says so under its summary).
"""

from __future__ import annotations

from pathlib import Path

from . import decisions, propagation, requests, state
from .model import DECISIONS, Rule

ROOT = Path(__file__).resolve().parents[2]
SEMANTICS_PATH = ROOT / "docs" / "semantics.md"
#: the digest of the copy the map was made from (tests/broker_sim/test_rule_map.py holds the copy to it)
SEMANTICS_SHA256 = "2a6787542212af8e93d052b10c5c618bcd01e5cb764c964f76f29306cda6ca04"
DECISIONS_PATH = ROOT / "docs" / "controller" / "decisions.md"

RULE_MAP: tuple[Rule, ...] = (*state.RULES, *requests.RULES, *propagation.RULES, *decisions.RULES)

#: probes of the fleet that no rule of the sources states the answer of (each a rule they lack), with why
UNSTATED_PROBES: dict[str, str] = {
    "admin_probe:delete-unknown": "semantics.md states no DeleteTopics rule for an unknown topic; the fleet "
    "expects Kafka's UNKNOWN_TOPIC_OR_PARTITION (by name) or UNKNOWN_TOPIC_ID (by id, v6)",
}

__all__ = ["DECISIONS", "DECISIONS_PATH", "RULE_MAP", "SEMANTICS_PATH", "SEMANTICS_SHA256", "UNSTATED_PROBES", "Rule"]
