"""The docs' "What it checks" (docs/fleet/checks.md) stays true: every rule of the checker is listed with its invariant,
and every planted bug of broken_daemon.py (a single controller's and a quorum's) is in the tables of what
the fleet catches."""

from __future__ import annotations

from pathlib import Path

from broker_sim.check.violations import RULES
from tests.broker_sim.broken_daemon import BUGS, QUORUM_BUGS

README = (Path(__file__).resolve().parents[2] / "docs" / "fleet" / "checks.md").read_text()


def test_every_rule_is_in_the_readme_with_its_invariant() -> None:
    missing = [rule for rule, invariant in RULES.items() if f"| `{rule}` | {invariant} |" not in README]
    assert missing == []


def test_every_planted_bug_is_in_the_readme() -> None:
    assert [bug for bug in [*BUGS, *QUORUM_BUGS] if f"| {bug}: " not in README] == []
