"""The run's entry records the slack the checker allows a silent broker (`silence_slack_ms`): the
fleet writes its timing's, the line round-trips, and a line without it (0: not recorded) derives
the same value from the heartbeat interval and session timeout it records."""

from __future__ import annotations

import json
from pathlib import Path

from broker_sim.journal import JournalWriter, RunStarted, read_journal, to_line
from broker_sim.model.timing import timing_for
from broker_sim.shell.runner import RunSpec, _run_started


def spec(heartbeat_ms: int, session_timeout_ms: int) -> RunSpec:
    return RunSpec(
        controllers=(),
        broker_ids=(4, 5),
        topics=1,
        partitions=1,
        replication_factor=1,
        duration_s=1.0,
        seed=7,
        scenario="chaos",
        timing=timing_for(heartbeat_ms, session_timeout_ms),
        shutdown_bound_ms=30_000,
        capture_dir=None,
        journal_path=None,
        create_topics=False,
        listen_host="127.0.0.1",
    )


def test_the_fleet_records_its_timing_slack_in_the_run_entry() -> None:
    for heartbeat_ms, session_timeout_ms, slack_ms in [(500, 6_000, 2_000), (2_000, 3_000, 2_000), (100, 900, 1_000)]:
        entry = _run_started(spec(heartbeat_ms, session_timeout_ms), 1)
        assert entry.silence_slack_ms == slack_ms == entry.silence_slack
        assert entry.silence_slack_ms == round(timing_for(heartbeat_ms, session_timeout_ms).silence_slack_s * 1000)


def test_the_slack_round_trips_and_a_line_without_it_derives_it(tmp_path: Path) -> None:
    recorded = RunStarted(1, 7, "chaos", 2, 4, 2_000, 9_000, 30_000, silence_slack_ms=5_000)
    writer = JournalWriter(tmp_path / "journal.jsonl")
    writer.write(recorded)
    line = json.loads(to_line(recorded))
    del line["silence_slack_ms"]
    writer.close()
    with open(tmp_path / "journal.jsonl", "a", encoding="utf-8") as stream:
        stream.write(json.dumps(line) + "\n")
    again, older = read_journal(tmp_path / "journal.jsonl")
    assert isinstance(again, RunStarted) and again == recorded and again.silence_slack == 5_000
    assert isinstance(older, RunStarted) and older.silence_slack_ms == 0
    assert older.silence_slack == round(timing_for(2_000, 9_000).silence_slack_s * 1000) == 3_000
