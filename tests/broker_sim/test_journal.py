"""The journal round-trips every entry type, skips unknown kinds and a torn last line, rejects garbage."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker_sim.journal import (
    ENTRY_TYPES,
    JournalError,
    JournalWriter,
    PartitionAcked,
    Probe,
    RunEnded,
    StaleReplay,
    read_journal,
)


def test_entries_round_trip_through_a_file(tmp_path: Path) -> None:
    entries = [
        PartitionAcked(1, 2, 30, 3, "6f1c4d2a-0000-4000-8000-000000000001", 4, [2, 1], [30, 12], 2, 5, 9, [2, 1]),
        StaleReplay(2, 2, "ControlledShutdown", 3, "previous-incarnation", 30, 77, 9, [77], False, {"p": [1]}),
        Probe(3, 1, 3, "previous-epoch", "6f1c4d2a-0000-4000-8000-000000000001", 2, 3, 40, [0, 107]),
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
    assert len(ENTRY_TYPES) == 12
