"""The journal, read once for the checker: what its rules need of it, gathered before the log is opened.

Rules:
- Read before the log is opened, so that a log read while the controller runs holds everything the
  journal refers to (the controller answers after the fsync).
- A run's journal can hold millions of entries: the identical observations of one state (a
  LeaderAndIsr reaching every replica) are kept once, with their count; the rest is kept by kind.
- Topic ids are parsed once per distinct string; a malformed one is a problem, the zero id (a fleet
  that knew the topic by name only) leaves the entry unjudged, counted.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from broker_sim.journal import (
    BadAnswer,
    Entry,
    FaultInjected,
    Fenced,
    PartitionAcked,
    Probe,
    Registered,
    RequestProbe,
    RunEnded,
    RunStarted,
    ShutdownTracked,
    StaleReplay,
    StateObserved,
    TopicCreated,
)

from .rendering import render_entry

Key = tuple[int, int, int]  # (topic id int, partition, partition epoch)


Observation = tuple[int, int, int, int, int, tuple[int, ...], tuple[int, ...], int]
LIFECYCLE = (RunStarted, RunEnded, ShutdownTracked, Fenced, FaultInjected)
JUDGED = (PartitionAcked, Registered, TopicCreated, StaleReplay, BadAnswer, RequestProbe, Probe)


@dataclass
class JournalPlan:
    """What the checks need of the journal, gathered in one pass."""

    entries: int = 0
    judged: list[Entry] = field(default_factory=list)  # acknowledgements, replays, probes, bad answers, in order
    observed: dict[Observation, tuple[StateObserved, int]] = field(default_factory=dict)  # -> (first, count)
    lifecycle: list[Entry] = field(default_factory=list)  # runs, shutdowns, fences, faults (for liveness)
    watch: set[Key] = field(default_factory=set)
    #: (broker, topic id int, partition) -> (ms, partition epoch) of each state it observed, for delivery
    observations: dict[tuple[int, int, int], list[tuple[int, int]]] = field(default_factory=dict)
    #: broker -> when it observed a state of a topic it knew by name only (LeaderAndIsr v0-4)
    unnamed_observations: dict[int, list[int]] = field(default_factory=dict)
    topic_ids: dict[str, int] = field(default_factory=dict)  # the journal's id strings, parsed once
    problems: list[str] = field(default_factory=list)
    unidentified: Counter[str] = field(default_factory=Counter)  # entries with the zero topic id: not judged

    def add(self, entry: Entry) -> None:
        """Take one entry, in journal order (see the module rules); a malformed topic id is a problem."""
        self.entries += 1
        if isinstance(entry, LIFECYCLE):
            self.lifecycle.append(entry)
            return
        if isinstance(entry, PartitionAcked | StateObserved | TopicCreated):
            topic = self.topic_ids.get(entry.topic_id)
            if topic is None:
                try:
                    topic = self.topic_ids[entry.topic_id] = uuid.UUID(entry.topic_id).int
                except ValueError:
                    self.problems.append(f"journal: {render_entry(entry)} has a malformed topic id")
                    return
            if topic == 0:  # the fleet could not name the topic's id (e.g. an answer by name only)
                self.unidentified[entry.kind] += 1
                if isinstance(entry, StateObserved):
                    self.unnamed_observations.setdefault(entry.broker, []).append(entry.wall_ns // 1_000_000)
                return
            if isinstance(entry, StateObserved):
                _observe(self, topic, entry)
                return
            if isinstance(entry, PartitionAcked):
                self.watch.add((topic, entry.partition, entry.partition_epoch))
        if isinstance(entry, JUDGED):
            self.judged.append(entry)


def plan(entries: Iterable[Entry]) -> JournalPlan:
    """Read the journal (see the module rules); malformed topic ids are problems."""
    result = JournalPlan()
    for entry in entries:
        result.add(entry)
    return result


def _observe(result: JournalPlan, topic: int, entry: StateObserved) -> None:
    result.watch.add((topic, entry.partition, entry.partition_epoch))
    seen = (entry.wall_ns // 1_000_000, entry.partition_epoch)
    result.observations.setdefault((entry.broker, topic, entry.partition), []).append(seen)
    key = (
        topic,
        entry.partition,
        entry.partition_epoch,
        entry.leader,
        entry.leader_epoch,
        tuple(entry.isr),
        tuple(entry.replicas),
        entry.controller_epoch,
    )
    first, count = result.observed.get(key, (entry, 0))
    result.observed[key] = (first, count + 1)
