"""The journal's format: every entry kind by its `kind`, and entries to and from JSON lines (the
reader, which skips unknown kinds and a torn last line, and the writer).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import IO, Any

from .answers import (
    BadAnswer,
    CreateAnswered,
    DeleteAnswered,
    ElectAnswered,
    PartitionAcked,
    ReplicaStateAnswered,
    TopicCreated,
)
from .control import (
    ControllerEpochSeen,
    ControllerSwitched,
    ControlRefused,
    ControlSenderSeen,
    LeaderAndIsrObserved,
    StateObserved,
    StopObserved,
)
from .lifecycle import FaultInjected, Fenced, Registered, RunEnded, RunStarted, ShutdownTracked, UnfencedSeen
from .probes import AdminProbe, Probe, RequestProbe, StaleReplay
from .quorum import (
    ControllerFaulted,
    FailoverMeasured,
    QuorumLeaderSeen,
    QuorumLeadersSeen,
    QuorumStarted,
    VoteProbed,
)

Entry = (
    RunStarted
    | RunEnded
    | Registered
    | TopicCreated
    | PartitionAcked
    | StateObserved
    | StaleReplay
    | Probe
    | RequestProbe
    | AdminProbe
    | ShutdownTracked
    | Fenced
    | FaultInjected
    | BadAnswer
    | ControllerSwitched
    | ControlRefused
    | ControllerEpochSeen
    | ControllerFaulted
    | QuorumLeaderSeen
    | FailoverMeasured
    | QuorumStarted
    | QuorumLeadersSeen
    | VoteProbed
    | ControlSenderSeen
    | StopObserved
    | LeaderAndIsrObserved
    | UnfencedSeen
    | DeleteAnswered
    | CreateAnswered
    | ElectAnswered
    | ReplicaStateAnswered
)
ENTRY_TYPES: dict[str, type[Any]] = {
    kind.kind: kind
    for kind in (
        RunStarted,
        RunEnded,
        Registered,
        TopicCreated,
        PartitionAcked,
        StateObserved,
        StaleReplay,
        Probe,
        RequestProbe,
        AdminProbe,
        ShutdownTracked,
        Fenced,
        FaultInjected,
        BadAnswer,
        ControllerSwitched,
        ControlRefused,
        ControllerEpochSeen,
        ControllerFaulted,
        QuorumLeaderSeen,
        FailoverMeasured,
        QuorumStarted,
        QuorumLeadersSeen,
        VoteProbed,
        ControlSenderSeen,
        StopObserved,
        LeaderAndIsrObserved,
        UnfencedSeen,
        DeleteAnswered,
        CreateAnswered,
        ElectAnswered,
        ReplicaStateAnswered,
    )
}

_FIELD_NAMES: dict[type[Any], tuple[str, ...]] = {
    kind: tuple(item.name for item in fields(kind)) for kind in ENTRY_TYPES.values()
}


def field_names(entry: Entry) -> tuple[str, ...]:
    """The fields of `entry`'s kind, in order (its `kind` aside)."""
    return _FIELD_NAMES[type(entry)]


class JournalError(ValueError):
    """A journal line that is not a valid entry (other than a truncated last line)."""


def to_line(entry: Entry) -> str:
    # the same object `asdict` gives (entries hold only JSON values), without its deep copy
    names = _FIELD_NAMES[type(entry)]
    data = {"kind": entry.kind}
    for name in names:
        data[name] = getattr(entry, name)
    return json.dumps(data, separators=(",", ":")) + "\n"


def from_object(data: dict[str, Any]) -> Entry | None:
    """The entry `data` describes; None for an unknown kind. Raises JournalError on a bad entry."""
    kind = ENTRY_TYPES.get(str(data.get("kind")))
    if kind is None:
        return None
    names = _FIELD_NAMES[kind]
    try:
        entry: Entry = kind(**{key: value for key, value in data.items() if key in names})
    except TypeError as error:
        raise JournalError(f"{data.get('kind')} entry: {error}") from error
    return entry


def read_journal(path: Path) -> Iterator[Entry]:
    """The entries of a journal file, read a line at a time (a run's journal can hold millions); a
    partly written last line is skipped, any other bad line raises."""
    with open(path, encoding="utf-8", newline="\n") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.endswith("\n"):
                return  # no newline yet: the writer was interrupted mid-line
            if line.strip():
                entry = _entry(path, number, line)
                if entry is not None:
                    yield entry


def _entry(path: Path, number: int, line: str) -> Entry | None:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        raise JournalError(f"{path}:{number}: not JSON: {error}") from error
    if not isinstance(data, dict):
        raise JournalError(f"{path}:{number}: not an object")
    return from_object(data)


class JournalWriter:
    """Appends entries to a journal file; `flush` makes them visible to a concurrent reader."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._stream: IO[str] = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        self.entries = 0

    def write(self, entry: Entry) -> None:
        self._stream.write(to_line(entry))
        self.entries += 1

    def write_all(self, entries: Iterable[Entry]) -> None:
        for entry in entries:
            self.write(entry)

    def flush(self) -> None:
        self._stream.flush()

    def close(self) -> None:
        self._stream.close()
