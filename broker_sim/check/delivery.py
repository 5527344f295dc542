"""Delivery: every committed partition state reaches its live replicas as a LeaderAndIsr.

Rules (semantics.md, "Propagation to brokers": every committed partition change goes to every
replica of the partition as LeaderAndIsr; queued orders may merge, the latest state winning):
- When the log changes a partition (a PartitionRecord or PartitionChangeRecord, at its batch's
  timestamp), each replica on a fleet broker that is then active (registered, unfenced, not
  shutting down) with its replica online owes an observation: by the run's bound
  (`shutdown_bound_ms`, the time the fleet allows a request and its answer under load) that
  broker journals a StateObserved of the partition at that partition epoch or a later one (a
  merged, newer state delivers the older one).
- Excused, as the log says at the deadline: the broker's incarnation changed, it is fenced or
  shutting down, its replica went offline, the topic is gone; or the incarnation crashed before
  the deadline (the journal's crash fault: `liveness.crashed_incarnations`); or the run ended
  before the deadline; or the broker journalled, within the window, a state it could not name (a topic
  known by name only: LeaderAndIsr v0-4 before the fleet learnt its id). Faults need no excuse
  of their own: a crashed or paused broker is fenced within a session timeout (a fenced broker's
  queue may be dropped), and unfencing it sends a full LeaderAndIsr, which delivers every state
  it missed.
- On for every run whose RunStarted says its brokers journal the states they accept (the fleet
  writes it): a controller that sends no LeaderAndIsr at all owes every change and is reported. A
  journal written before that field is judged only if it holds an observation (it cannot tell a
  run delivered nothing from a fleet that journalled nothing).
- The journal's observations are kept per (broker, topic, partition) as their times and the
  highest partition epoch seen by each; an obligation is judged once, at its deadline, then
  dropped, so what is held is the changes of one bound's window.
"""

from __future__ import annotations

import bisect
import uuid
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from broker_sim.journal import RunStarted

from .events import LogEnd, Subscriber
from .liveness import NS_PER_MS, crashed_incarnations, due_after_pauses, pauses_of, run_covering, run_end_ns, runs_of
from .log import Batch
from .rules import LogRules
from .state import Model, Partition, partition_label
from .violations import Violation, ViolationSink

if TYPE_CHECKING:
    from .journal_plan import JournalPlan


class Owed(NamedTuple):
    deadline_ms: int
    since_ms: int
    broker: int
    broker_epoch: int
    topic: int  # the topic id's int
    partition: int
    partition_epoch: int
    topic_name: str


class Seen(NamedTuple):
    """One broker's observations of one partition: times (ms) and the highest epoch by each."""

    times: list[int]
    highest: list[int]


class Delivery(Subscriber):
    """Who owes an observation of each change (`on_batch_end`), judged as the log's clock passes the deadline."""

    name = "delivery"

    def __init__(self, image: LogRules) -> None:
        super().__init__()
        self.image = image
        self.runs: Sequence[RunStarted] = ()  # the journal's runs
        self.run_end_ms: int | None = None  # when the last run ended, if the journal says
        #: (broker, topic, partition) -> (ms, epoch) of each observation
        self.observations: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
        self.unnamed: dict[int, list[int]] = {}  # broker -> times (ms) of observations without a topic id
        self.owed: deque[Owed] = deque()
        self.late: list[tuple[Owed, int]] = []  # (obligation, highest epoch seen by then)
        self.seen: dict[tuple[int, int, int], Seen] = {}
        self.crashed: dict[tuple[int, int], int] = {}  # (broker, broker epoch) -> when it crashed (ms)
        self.pauses: dict[int, list[tuple[int, int]]] = {}  # broker -> its pauses (liveness.pauses_of)

    # ------------------------------------------------------------------ events
    def on_journal_end(self, plan: JournalPlan) -> None:
        self.runs = runs_of(plan.lifecycle)
        end_ns = run_end_ns(plan.lifecycle)
        self.run_end_ms = None if end_ns is None else end_ns // NS_PER_MS
        self.observations, self.unnamed = plan.observations, plan.unnamed_observations
        self.crashed = crashed_incarnations([*plan.judged, *plan.lifecycle])
        self.pauses = pauses_of(plan.lifecycle)
        self.wants_changes = self.enabled
        for key, seen in self.observations.items():
            ordered = sorted(seen)
            highest, top = [], -1
            for _, epoch in ordered:
                top = max(top, epoch)
                highest.append(top)
            self.seen[key] = Seen([ms for ms, _ in ordered], highest)
        for times in self.unnamed.values():
            times.sort()

    def follows(self, hook: str) -> bool:
        if hook in ("on_time", "on_batch_end"):
            return self.enabled  # nothing is owed otherwise
        return super().follows(hook)

    def on_time(self, timestamp_ms: int) -> None:
        if self.owed:
            self.probe(self.image.model, timestamp_ms)

    def on_batch_end(self, batch: Batch, changed: Sequence[Partition]) -> None:
        if changed:
            self.offer(self.image.model, changed, batch.timestamp_ms)

    def on_log_end(self, end: LogEnd) -> None:
        self.finish(self.image.model)
        self.report(self.sink)

    @property
    def enabled(self) -> bool:
        """Judged for a journal that says how its run went and whose brokers journal the states they
        accept: every run of a fleet that says so (`RunStarted.journals_states`), so that a run
        delivering nothing is judged too; an older journal only if it holds an observation."""
        if not self.runs or self.run_end_ms is None:
            return False
        return bool(self.observations) or any(run.journals_states for run in self.runs)

    def offer(self, model: Model, changed: Sequence[Partition], at_ms: int) -> None:
        """The partitions one batch changed, at its timestamp: who owes an observation of each."""
        brokers = model.brokers
        for partition in changed:
            for replica in partition.replicas:
                broker = brokers.get(replica)
                if broker is None or not broker.active or replica in partition.offline:
                    continue
                run = run_covering(self.runs, replica)
                if run is None or run.delivery_bound <= 0:
                    continue
                deadline = due_after_pauses(self.pauses.get(replica, ()), at_ms, run.delivery_bound)
                if self.run_end_ms is None or deadline > self.run_end_ms:
                    continue
                topic = partition.topic
                epoch = partition.partition_epoch
                key = (topic.topic_id.int, partition.index, epoch, topic.name)
                self.owed.append(Owed(deadline, at_ms, replica, broker.epoch, *key))

    def probe(self, model: Model, until_ms: int) -> None:
        """Judge every obligation whose deadline is before `until_ms`, on the state `model` has now."""
        owed = self.owed
        while owed and owed[0].deadline_ms < until_ms:
            self._judge(model, owed.popleft())

    def finish(self, model: Model) -> None:
        self.probe(model, 1 << 62)

    def _judge(self, model: Model, owed: Owed) -> None:
        broker = model.brokers.get(owed.broker)
        topic = model.topics.get(owed.topic)
        partition = topic.partitions.get(owed.partition) if topic is not None else None
        if broker is None or broker.epoch != owed.broker_epoch or not broker.active:
            return
        if partition is None or owed.broker in partition.offline or owed.broker not in partition.replica_set:
            return
        if self.crashed.get((owed.broker, owed.broker_epoch), owed.deadline_ms + 1) <= owed.deadline_ms:
            return  # that incarnation was gone: nothing could reach it
        unnamed = self.unnamed.get(owed.broker, ())
        if unnamed and bisect.bisect_left(unnamed, owed.since_ms) < bisect.bisect_right(unnamed, owed.deadline_ms):
            return  # it observed states it could not name meanwhile: one may be this one
        seen = self.seen.get((owed.broker, owed.topic, owed.partition))
        highest = -1
        if seen is not None:
            index = bisect.bisect_right(seen.times, owed.deadline_ms)
            highest = seen.highest[index - 1] if index else -1
        if highest < owed.partition_epoch:
            self.late.append((owed, highest))

    def report(self, sink: ViolationSink) -> None:
        for owed, highest in self.late:
            got = f"the newest it had accepted was epoch {highest}" if highest >= 0 else "it had accepted none"
            sink.add(
                Violation(
                    "control-delivery",
                    f"partition epoch {owed.partition_epoch} had not reached replica {owed.broker} (broker epoch "
                    f"{owed.broker_epoch}) as a LeaderAndIsr {(owed.deadline_ms - owed.since_ms) / 1000:.1f} s "
                    f"after it was committed: {got}",
                    partition=partition_label(owed.topic_name, uuid.UUID(int=owed.topic), owed.partition),
                    broker=owed.broker,
                )
            )
