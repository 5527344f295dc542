"""The slack a silent broker is allowed past its session (`silent-broker-unfenced`) is the one the
fleet recorded in its journal's RunStarted; a journal that recorded none gets the formula's, from
the heartbeat interval and session timeout it recorded.

The logs and journals are those of test_journal_rules' silent brokers: a pause of broker 4 at
FAULT_MS in a run of 2 s heartbeats and a 9 s session, whose formula slack is SLACK_MS (3 s).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from broker_sim.check.liveness import silence_slack_ms
from broker_sim.journal import Entry

from .logs import rules
from .test_journal_rules import END, FAULT_MS, SESSION_MS, SLACK_MS, checked, fenced_at, run_started, silenced

RECORDED_MS = 7_000  # longer than the formula's: a fence the formula calls late is in time
PAUSE_MS = SESSION_MS + RECORDED_MS + 4_000  # outlasts either deadline, so that the rule judges it


def journal(**recorded: int) -> list[Entry]:
    return [run_started(**recorded), silenced(duration_ms=PAUSE_MS), END]


def test_the_slack_is_the_one_the_journal_recorded(tmp_path: Path) -> None:
    assert silence_slack_ms(run_started(silence_slack_ms=RECORDED_MS)) == RECORDED_MS
    recorded = journal(silence_slack_ms=RECORDED_MS)
    between = fenced_at(FAULT_MS + SESSION_MS + SLACK_MS + 1_000)  # late by the formula, in time by the journal
    assert checked(tmp_path / "between", recorded, between)[0].violations == []
    late, _ = checked(tmp_path / "late", recorded, fenced_at(FAULT_MS + SESSION_MS + RECORDED_MS + 500))
    assert rules(late) == ["silent-broker-unfenced"]


def test_a_journal_without_it_gets_the_formula_from_its_configuration(tmp_path: Path) -> None:
    older = run_started()
    assert older.silence_slack_ms == 0 and silence_slack_ms(older) == SLACK_MS
    slower = dataclasses.replace(older, heartbeat_ms=4_000, session_timeout_ms=6_000)
    assert silence_slack_ms(slower) == 4_000  # a heartbeat interval, longer than a third of the session
    between = fenced_at(FAULT_MS + SESSION_MS + SLACK_MS + 1_000)
    assert rules(checked(tmp_path, journal(), between)[0]) == ["silent-broker-unfenced"]
