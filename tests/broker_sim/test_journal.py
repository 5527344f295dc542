"""The journal round-trips every entry type, skips unknown kinds and a torn last line, rejects garbage;
the kinds that came with controller failover and with the fleet's own quorum stay readable by the
analytics job's journal schema."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.types import BooleanType, DoubleType, IntegerType, LongType, StringType

from analytics.journal import JOURNAL_FIELDS
from broker_sim import journal
from broker_sim.journal import (
    ENTRY_TYPES,
    ControllerEpochSeen,
    ControllerFaulted,
    ControllerSwitched,
    ControlRefused,
    ControlSenderSeen,
    FailoverMeasured,
    JournalError,
    JournalWriter,
    LeaderAndIsrObserved,
    PartitionAcked,
    Probe,
    QuorumLeaderSeen,
    QuorumLeadersSeen,
    QuorumStarted,
    RunEnded,
    StaleReplay,
    StopObserved,
    VoteProbed,
    read_journal,
    to_line,
)

FAILOVER_ENTRIES = [
    ControllerSwitched(4, 3, "data", "127.0.0.1:9093", "127.0.0.1:9095", "not-controller", "AlterPartition", "41"),
    ControlRefused(5, 3, 40, "LeaderAndIsr", 7, 40, 4, 5, 11),
    ControllerEpochSeen(6, 3, 40, "StopReplica", 6, 5),
]
QUORUM_ENTRIES = [
    ControllerFaulted(7, 2, "pause", 3334.6, 2, 2),
    QuorumLeaderSeen(8, 3, 3, 27),
    FailoverMeasured(7, 2, "pause", "leader", 2, 2, 3, 3, 1006.6, 2253.4),
    FailoverMeasured(9, 1, "kill", "leader", 1, 3, -1, -1, None, None),
]
#: what the fleet sees of its own quorum beyond its faults: timeouts, every leader's claim, its probes
PROBE_ENTRIES = [
    QuorumStarted(1, [1, 2, 3], 500, 1000),
    QuorumLeadersSeen(10, [[1, 2], [3, 3]]),
    QuorumLeadersSeen(11, []),
    VoteProbed(12, 2, 1, 3, 0, 0, 41, 0, False),
    ControlSenderSeen(13, 4, "LeaderAndIsr", 2, 3, 0),
]
#: the brokers' side of the control duties: a StopReplica partition decided, a LeaderAndIsr accepted
DUTY_ENTRIES = [
    StopObserved(14, 4, 30, 3, 2, "fleet-1-scratch-0", 1, -2, True, 0),
    LeaderAndIsrObserved(15, 4, 30, 7, 1, 2, 2, 12),
]


def test_entries_round_trip_through_a_file(tmp_path: Path) -> None:
    entries = [
        PartitionAcked(1, 2, 30, 3, "6f1c4d2a-0000-4000-8000-000000000001", 4, [2, 1], [30, 12], 2, 5, 9, [2, 1]),
        StaleReplay(2, 2, "ControlledShutdown", 3, "previous-incarnation", 30, 77, 9, [77], False, {"p": [1]}),
        Probe(3, 1, 3, "previous-epoch", "6f1c4d2a-0000-4000-8000-000000000001", 2, 3, 40, [0, 107]),
        *FAILOVER_ENTRIES,
        *QUORUM_ENTRIES,
        *PROBE_ENTRIES,
        *DUTY_ENTRIES,
        RunEnded(3, True),
    ]
    writer = JournalWriter(tmp_path / "journal.jsonl")
    writer.write_all(entries)
    writer.close()
    assert list(read_journal(tmp_path / "journal.jsonl")) == entries


def test_unknown_kinds_and_a_torn_last_line_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_text('{"kind":"from-the-future","x":1}\n{"kind":"end","wall_ns":5,"finished":false}\n{"kind":"end","wa')
    assert list(read_journal(path)) == [RunEnded(5, False)]


@pytest.mark.parametrize("line", ["not json", "[1, 2]", '{"kind":"end","wall_ns":1}'])
def test_a_bad_complete_line_is_an_error(tmp_path: Path, line: str) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(JournalError):
        list(read_journal(path))


def test_every_kind_is_registered_once() -> None:
    kinds = [value for value in vars(journal).values() if isinstance(value, type) and hasattr(value, "kind")]
    assert sorted(ENTRY_TYPES) == sorted(kind.kind for kind in kinds)
    assert len(ENTRY_TYPES) >= 24


SPARK_TYPES: dict[type[Any], tuple[type[Any], ...]] = {
    StringType: (str,),
    LongType: (int,),
    IntegerType: (int,),
    DoubleType: (int, float),
    BooleanType: (bool,),
}


@pytest.mark.parametrize(
    "entry",
    FAILOVER_ENTRIES + QUORUM_ENTRIES[:3] + PROBE_ENTRIES[:2] + PROBE_ENTRIES[3:] + DUTY_ENTRIES,
    ids=lambda entry: entry.kind,
)
def test_the_failover_kinds_are_no_event_of_the_analytics_job_and_fit_its_schema(entry: Any) -> None:
    """analytics reads journals with Spark's JSON reader and a fixed schema (`JOURNAL_FIELDS`): a field
    of a new kind that shares a name with the schema must have its type, or Spark would null the row;
    and the new kinds are none of the kinds it turns into events (analytics.journal's rules)."""
    assert entry.kind not in {"fault", "stale_replay", "fenced", "registered"}
    line = json.loads(to_line(entry))
    schema = {field.name: type(field.dataType) for field in JOURNAL_FIELDS.fields}
    shared = [name for name in (f.name for f in fields(entry)) if name in schema]
    # the quorum's are of no broker
    assert "wall_ns" in shared and ("broker" in shared or entry in QUORUM_ENTRIES + PROBE_ENTRIES)
    for name in shared:
        assert isinstance(line[name], SPARK_TYPES[schema[name]]) and not (
            isinstance(line[name], bool) and schema[name] is not BooleanType
        ), name
