"""The checker's rules as subscribers of a replay (broker_sim/check/events.py, replay.py): what a
subscriber is told, in what order, on which state, and how its findings come back merged."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from broker_sim.check import subscribers
from broker_sim.check.events import LogEnd, RecordHandler, Subscriber, findings
from broker_sim.check.journal_plan import JournalPlan
from broker_sim.check.log import Batch, LogReader
from broker_sim.check.replay import Replay
from broker_sim.check.rules import LogRules
from broker_sim.check.state import Model, Partition
from broker_sim.check.violations import Violation, ViolationSink
from broker_sim.journal import Entry, Registered, RunEnded
from protocol.records.control import LeaderChangeMessage
from protocol.records.metadata import BeginTransactionRecord, EndTransactionRecord, PartitionChangeRecord
from protocol.spec import Data

from .check.logs import TOPIC_ID, LogBuilder, incarnation


class Recorder(Subscriber):
    """Writes down every event, with the partition epoch of t-0 the image holds at it."""

    name = "recorder"
    wants_changes = True

    def __init__(self, image: LogRules) -> None:
        super().__init__()
        self.image = image
        self.events: list[tuple[object, ...]] = []

    def epoch(self) -> int:
        topic = self.image.model.topics.get(TOPIC_ID.int)
        partition = topic.partitions.get(0) if topic is not None else None
        return -1 if partition is None else partition.partition_epoch

    def on_journal_entry(self, entry: Entry) -> None:
        self.events.append(("entry", entry.kind))

    def on_journal_end(self, plan: JournalPlan) -> None:
        self.events.append(("journal end", plan.entries))

    def on_time(self, timestamp_ms: int) -> None:
        self.events.append(("time", self.epoch()))

    def on_batch_begin(self, batch: Batch) -> None:
        self.events.append(("begin", batch.base_offset))

    def record_handlers(self) -> Mapping[type, RecordHandler]:
        return {PartitionChangeRecord: self.change, LeaderChangeMessage: self.change}

    def change(self, offset: int, record: Data) -> None:
        self.events.append((type(record).__name__, offset, self.epoch()))

    def on_batch_end(self, batch: Batch, changed: Sequence[Partition]) -> None:
        self.events.append(("end", batch.base_offset, [p.label.split(" ")[0] for p in changed]))

    def on_log_end(self, end: LogEnd) -> None:
        self.events.append(("log end", end.offset, end.whole, end.complete))
        self.sink.add(Violation("leader-epoch", "planted by the recorder", end.offset))


def replay(log: LogBuilder, journal: list[Entry], image: LogRules, extra: Subscriber) -> Replay:
    """A check's replay, with `extra` after the check's own subscribers."""
    with LogReader(log.data_dir) as reader:
        run = Replay(reader, image, [*subscribers(image), extra])
        run.run(journal)
    return run


def test_a_subscriber_hears_every_event_in_order_on_the_state_of_its_moment(tmp_path: Path) -> None:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    first = log.change(0, isr=(1, 2))  # partition epoch 1
    begin = log.batch(BeginTransactionRecord(name="held"))
    held = log.change(0, isr=(1,))  # held back until the End
    end = log.batch(EndTransactionRecord())
    log.write()
    image = LogRules(Model(), ViolationSink())
    recorder = Recorder(image)
    journal: list[Entry] = [Registered(1, 1, str(incarnation(1)), log.epochs[1]), RunEnded(2, True)]
    run = replay(log, journal, image, recorder)
    events = recorder.events
    assert events[:3] == [("entry", "registered"), ("entry", "end"), ("journal end", 2)]
    assert events[3:6] == [("time", -1), ("begin", 0), ("LeaderChangeMessage", 0, -1)]
    at_first = events.index(("begin", first))
    assert events[at_first - 1 : at_first + 3] == [
        ("time", 0),  # the clock moves on before the batch: the state is still the one before it
        ("begin", first),
        ("PartitionChangeRecord", first, 1),  # the image's owner applied it before the others heard
        ("end", first, ["t-0"]),
    ]
    at_held = events.index(("begin", held))
    assert events[at_held + 1] == ("end", held, [])  # held back: nothing changed yet
    at_end = events.index(("begin", end))
    assert events[at_end + 1 : at_end + 3] == [("PartitionChangeRecord", held, 2), ("end", end, ["t-0"])]
    assert ("begin", begin) in events and events[-1] == ("log end", log.next_offset, True, True)
    result = findings(run.subscribers)
    assert result.sink.counts == {"leader-epoch": 1}  # the recorder's own finding, merged
    assert result.counts["records"] == log.next_offset


class Declining(Subscriber):
    """Overrides on_time but declines it: the replay must not call it."""

    def follows(self, hook: str) -> bool:
        return hook != "on_time" and super().follows(hook)

    def on_time(self, timestamp_ms: int) -> None:
        raise AssertionError("declined")

    def on_log_end(self, end: LogEnd) -> None:
        self.sink.add(Violation("leader-epoch", "heard the end", end.offset))


def test_a_declined_event_is_not_published(tmp_path: Path) -> None:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    log.write()
    declining = Declining()
    replay(log, [], LogRules(Model(), ViolationSink()), declining)
    assert declining.sink.counts == {"leader-epoch": 1}


def test_merged_findings_keep_the_first_of_each_rule_and_count_all() -> None:
    first, second = ViolationSink(keep_per_rule=2), ViolationSink(keep_per_rule=2)
    for offset in range(3):
        first.add(Violation("leader-epoch", "a", offset))
        second.add(Violation("leader-epoch", "b", 10 + offset))
    second.add(Violation("isr-shape", "c", 20))
    merged = ViolationSink(keep_per_rule=2)
    merged.absorb(first)
    merged.absorb(second)
    assert merged.counts == {"leader-epoch": 6, "isr-shape": 1}
    assert [(v.rule, v.offset) for v in merged.kept] == [("leader-epoch", 0), ("leader-epoch", 1), ("isr-shape", 20)]
