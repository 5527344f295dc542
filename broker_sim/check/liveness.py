"""Liveness, from the journal and the log: controlled shutdowns within the run's bound, no live broker fenced.

Rules:
- Each fleet process writes a RunStarted naming its brokers (`first_broker_id` and the next
  `brokers - 1`); a broker's shutdown bound and session timeout are its run's.
- A ShutdownTracked is late when it finished more than `shutdown_bound_ms` after it started, or did
  not finish while the run ended (RunEnded) more than the bound after its start. A late shutdown is
  excused when the fleet got in its own way: a fault other than the shutdown itself or a disk
  fault (a crash, a pause, a dropped connection) hit that broker between its start and the bound.
- Otherwise the log decides, from the state at the bound (after the last batch written by then):
  the broker re-registered, or every partition of replication factor > 1 it still led had no
  eligible successor in its ISR (semantics.md: such a leader stays, so the shutdown cannot end):
  excused. A partition it led with an eligible successor, or nothing left to lead and still not
  let go: a `shutdown-bound` violation, if the state said so already a grace period before the
  bound (three heartbeat intervals, at least 5 s, at most half the bound): a successor that became
  eligible just before the bound only moves at the broker's next retry.
- A shutdown that finished (RemainingPartitions empty, or ShouldShutDown) lets the broker go: in the
  state the log reaches by then (`RELEASE_SLACK_MS` after the fleet had the answer: the records
  behind an answer are written before it), that incarnation leads no partition of replication
  factor > 1. Nothing may make a shutting-down broker leader again, so the state can only be
  better later; a leader left behind is a `shutdown-release` violation (the broker goes away
  with partitions that wait for its session to time out).
- Every Fenced with intended=False is a violation: `fleet-late-heartbeat` when the broker's longest
  heartbeat gap reached the session timeout (the fleet was late), `live-broker-fenced` otherwise.
  The fence record of that broker epoch nearest before it, if the log has one, is named.
- The other side of the session (`silent-broker-unfenced`): a crash or a pause silences a broker;
  when the silence lasts at least the session timeout plus a slack, and the run went on that long,
  the incarnation that was registered and unfenced when it began must be fenced (or replaced by a
  new registration) in the state the log reaches by then. The slack (`silence_slack_ms`: the one
  the fleet recorded in its RunStarted; for a run that recorded none, 1 s, a heartbeat interval or
  a third of the session, whichever is longest, from the heartbeat interval and session timeout
  it recorded) covers a heartbeat sent just before the silence and decided late by a loaded
  controller (its session runs from the decision), the controller's timer and the fencing
  batches. A new controller epoch in between excuses it (a controller starting gives every broker
  a whole session). A silence that began before the log's history (a log starting at a base
  snapshot, its older segments deleted) is not judged: the incarnation and the controller epoch
  at its start are gone with them.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from broker_sim.journal import Entry, FaultInjected, Fenced, Registered, RunEnded, RunStarted, ShutdownTracked

from .events import LogEnd, Subscriber
from .rendering import render_entry
from .rules import LISTED, History, LogRules
from .state import Model
from .violations import Violation, ViolationSink

if TYPE_CHECKING:
    from .journal_plan import JournalPlan

#: Faults that do not stop a broker from completing its controlled shutdown.
HARMLESS_FAULTS = frozenset({"controlled-shutdown", "disk-failure", "disk-repair"})
#: Faults that silence a broker (no heartbeat) for their duration.
SILENT_FAULTS = frozenset({"crash", "pause"})
NS_PER_MS = 1_000_000
RELEASE_SLACK_MS = 50


class Silence(NamedTuple):
    at_ms: int  # when to look: the fault's start, then (once the incarnation is known) its deadline
    deadline_ms: int  # when the silent incarnation must be fenced by
    fault: FaultInjected
    epoch: int  # the silent incarnation's broker epoch; -1 until seen at the fault's start
    controller_epoch: int  # the controller epoch then


class Deadline(NamedTuple):
    at_ms: int  # when to judge: the bound, or a grace period before it
    shutdown: ShutdownTracked
    late: str  # how it was late, for the message
    number: int  # which late shutdown (each is judged twice)


class Liveness(Subscriber):
    """The journal's liveness facts; `probe` evaluates deadlines as replay passes their time."""

    name = "liveness"

    def __init__(self, image: LogRules) -> None:
        super().__init__()
        self.image = image
        self.entries: Sequence[Entry] = ()  # the journal's runs, shutdowns, fences and faults
        self.runs: list[RunStarted] = []
        self.run_end_ns: int | None = None
        self.pending: list[Deadline] = []
        self.verdicts: dict[int, list[tuple[Deadline, str | None]]] = {}  # index -> (probe, why)
        self.releases: list[Deadline] = []  # finished shutdowns, judged when they finished
        self.release_verdicts: list[tuple[Deadline, str]] = []
        self.silences: list[Silence] = []  # by at_ms
        self.silence_verdicts: list[tuple[Silence, str]] = []
        self._notes: list[str] = []

    # ------------------------------------------------------------------ events
    def on_journal_end(self, plan: JournalPlan) -> None:
        self.entries = plan.lifecycle
        self.runs = runs_of(self.entries)
        self.run_end_ns = run_end_ns(self.entries)
        faults = [e for e in self.entries if isinstance(e, FaultInjected) and e.fault not in HARMLESS_FAULTS]
        for index, shutdown in enumerate(e for e in self.entries if isinstance(e, ShutdownTracked)):
            deadline = self._deadline(shutdown, index)
            if deadline is None:
                continue
            window_end = deadline.at_ms * NS_PER_MS
            if any(f.broker == shutdown.broker and shutdown.started_wall_ns <= f.wall_ns <= window_end for f in faults):
                continue
            self.pending.extend((deadline._replace(at_ms=deadline.at_ms - self._grace_ms(shutdown)), deadline))
        self.pending.sort(key=lambda deadline: deadline.at_ms)
        shutdowns = (e for e in self.entries if isinstance(e, ShutdownTracked))
        self.releases = sorted(
            (
                Deadline(shutdown.finished_wall_ns // NS_PER_MS + RELEASE_SLACK_MS, shutdown, "", index)
                for index, shutdown in enumerate(shutdowns)
                if shutdown.finished_wall_ns is not None
            ),
            key=lambda deadline: deadline.at_ms,
        )
        silent = [(e, self._silence_deadline_ms(e)) for e in self.entries if isinstance(e, FaultInjected)]
        self.silences = sorted(
            (Silence(f.wall_ns // NS_PER_MS, deadline, f, -1, -1) for f, deadline in silent if deadline is not None),
            key=lambda silence: silence.at_ms,
        )
        if any(isinstance(e, ShutdownTracked) for e in self.entries) and not self.runs:
            self._notes.append("the journal has no RunStarted: controlled shutdowns were not held to a bound")

    def follows(self, hook: str) -> bool:
        return self.waiting if hook == "on_time" else super().follows(hook)

    def on_time(self, timestamp_ms: int) -> None:
        if self.waiting:
            self.probe(self.image.model, timestamp_ms)

    def on_log_end(self, end: LogEnd) -> None:
        self.finish(self.image.model)
        self.report(self.image.history, self.sink)

    def notes(self) -> list[str]:
        return self._notes

    def run_of(self, broker_id: int) -> RunStarted | None:
        """The run of the fleet process that ran this broker (else the first run, if any)."""
        return run_covering(self.runs, broker_id) or (self.runs[0] if self.runs else None)

    @property
    def waiting(self) -> bool:
        """Is anything still to be judged at a later time of the log?"""
        return bool(self.pending or self.releases or self.silences)

    def _silence_deadline_ms(self, fault: FaultInjected) -> int | None:
        """When a silent broker must be fenced by, if this fault is held to it (see the module's rules)."""
        run = self.run_of(fault.broker)
        if fault.fault not in SILENT_FAULTS or run is None or run.session_timeout_ms <= 0:
            return None
        wait_ms = run.session_timeout_ms + silence_slack_ms(run)
        deadline_ms = fault.wall_ns // NS_PER_MS + wait_ms
        if fault.duration_ms < wait_ms or self.run_end_ns is None or self.run_end_ns // NS_PER_MS < deadline_ms:
            return None
        return deadline_ms

    def _grace_ms(self, shutdown: ShutdownTracked) -> int:
        run = self.run_of(shutdown.broker)
        assert run is not None
        return min(max(3 * run.heartbeat_ms, 5_000), run.shutdown_bound_ms // 2)

    def _deadline(self, shutdown: ShutdownTracked, index: int) -> Deadline | None:
        run = self.run_of(shutdown.broker)
        if run is None or run.shutdown_bound_ms <= 0:
            return None
        bound_ns = run.shutdown_bound_ms * NS_PER_MS
        deadline_ms = (shutdown.started_wall_ns + bound_ns) // NS_PER_MS
        if shutdown.finished_wall_ns is not None:
            took = shutdown.finished_wall_ns - shutdown.started_wall_ns
            if took <= bound_ns:
                return None
            return Deadline(deadline_ms, shutdown, f"took {took / 1e9:.1f} s", index)
        if self.run_end_ns is None or self.run_end_ns - shutdown.started_wall_ns <= bound_ns:
            return None
        return Deadline(
            deadline_ms,
            shutdown,
            f"had not finished {(self.run_end_ns - shutdown.started_wall_ns) / 1e9:.1f} s later, when the run ended",
            index,
        )

    def probe(self, model: Model, until_ms: int) -> None:
        """Judge every deadline before `until_ms` on the state `model` has now."""
        while self.pending and self.pending[0].at_ms < until_ms:
            deadline = self.pending.pop(0)
            self.verdicts.setdefault(deadline.number, []).append((deadline, _judge(model, deadline.shutdown)))
        while self.releases and self.releases[0].at_ms < until_ms:
            deadline = self.releases.pop(0)
            left = _left_leading(model, deadline.shutdown)
            if left is not None:
                self.release_verdicts.append((deadline, left))
        while self.silences and self.silences[0].at_ms < until_ms:
            self._follow_silence(model, self.silences.pop(0))

    def _follow_silence(self, model: Model, silence: Silence) -> None:
        """At the silence's start: note the incarnation, if registered and unfenced, and wait for
        its deadline. At the deadline: judge it."""
        broker = model.brokers.get(silence.fault.broker)
        if silence.epoch < 0 and model.before_history(silence.at_ms):
            return  # began before the log's history (a base snapshot's deleted past): the state then is gone
        if silence.epoch >= 0:
            still_unfenced = broker is not None and broker.epoch == silence.epoch and not broker.fenced
            if still_unfenced and model.controller_epoch == silence.controller_epoch:
                self.silence_verdicts.append((silence, _silence_verdict(silence, self.run_of(silence.fault.broker))))
            return
        if broker is None or broker.fenced:
            return
        waiting = Silence(silence.deadline_ms, silence.deadline_ms, silence.fault, broker.epoch, model.controller_epoch)
        bisect.insort(self.silences, waiting, key=lambda item: item.at_ms)

    def finish(self, model: Model) -> None:
        self.probe(model, 1 << 62)

    def report(self, history: History, sink: ViolationSink) -> None:
        self._report_shutdowns(history, sink)
        for deadline, left in self.release_verdicts:
            shutdown = deadline.shutdown
            flags = history.shutdowns.get((shutdown.broker, shutdown.broker_epoch), [])
            sink.add(
                Violation(
                    "shutdown-release",
                    f"the controlled shutdown ({shutdown.via}) was answered complete, yet {left}",
                    flags[0].offset if flags else None,
                    journal=render_entry(shutdown),
                    broker=shutdown.broker,
                    records=tuple(event.rendering for event in flags[:1]),
                )
            )
        for fenced in (e for e in self.entries if isinstance(e, Fenced) and not e.intended):
            sink.add(self._unintended_fence(fenced, history))
        for silence, message in self.silence_verdicts:
            sink.add(
                Violation(
                    "silent-broker-unfenced",
                    message,
                    journal=render_entry(silence.fault),
                    broker=silence.fault.broker,
                )
            )

    def _report_shutdowns(self, history: History, sink: ViolationSink) -> None:
        for probes in self.verdicts.values():
            if any(verdict is None for _, verdict in probes):
                continue  # excused at the bound, or a grace period before it
            deadline, verdict = probes[-1]
            shutdown = deadline.shutdown
            run = self.run_of(shutdown.broker)
            bound = run.shutdown_bound_ms if run is not None else 0
            flags = history.shutdowns.get((shutdown.broker, shutdown.broker_epoch), [])
            sink.add(
                Violation(
                    "shutdown-bound",
                    f"the controlled shutdown ({shutdown.via}, {shutdown.attempts} attempts) {deadline.late}, "
                    f"beyond the bound of {bound / 1000:.1f} s: {verdict}",
                    flags[0].offset if flags else None,
                    journal=render_entry(shutdown),
                    broker=shutdown.broker,
                    records=tuple(event.rendering for event in flags[:1]),
                )
            )

    def _unintended_fence(self, fenced: Fenced, history: History) -> Violation:
        run = self.run_of(fenced.broker)
        timeout = run.session_timeout_ms if run is not None else None
        events = [
            event
            for event in history.fences.get((fenced.broker, fenced.broker_epoch), [])
            if event.timestamp_ms * NS_PER_MS <= fenced.wall_ns
        ]
        if timeout is not None and fenced.longest_gap_ms >= timeout:
            rule, message = "fleet-late-heartbeat", "fenced by a late heartbeat of the fleet's own making"
        else:
            rule, message = "live-broker-fenced", "a live broker fenced"
        return Violation(
            rule,
            f"{message}: longest heartbeat gap {fenced.longest_gap_ms:.0f} ms, session timeout {timeout} ms",
            events[-1].offset if events else None,
            journal=render_entry(fenced),
            broker=fenced.broker,
            records=tuple(event.rendering for event in events[-1:]),
        )


def crashed_incarnations(entries: Iterable[Entry]) -> dict[tuple[int, int], int]:
    """(broker, broker epoch) -> when (ms) that incarnation ended in a crash: the broker's first
    crash fault journalled after the incarnation's registration. A controller may keep a crashed
    incarnation registered for long (each failover starts every session afresh, KAFKA-14392), but
    nothing can reach it: whatever it was owed reaches the broker's next incarnation as the full
    LeaderAndIsr at its unfence."""
    alive: dict[int, int] = {}  # broker -> the epoch of its incarnation registered last
    ended: dict[tuple[int, int], int] = {}
    for entry in sorted((e for e in entries if isinstance(e, Registered | FaultInjected)), key=lambda e: e.wall_ns):
        if isinstance(entry, Registered):
            alive[entry.broker] = entry.broker_epoch
        elif entry.fault == "crash" and entry.broker in alive:
            ended[(entry.broker, alive.pop(entry.broker))] = entry.wall_ns // NS_PER_MS
    return ended


def runs_of(entries: Iterable[Entry]) -> list[RunStarted]:
    """The journal's runs (a RunStarted per fleet process)."""
    return [entry for entry in entries if isinstance(entry, RunStarted)]


def run_end_ns(entries: Iterable[Entry]) -> int | None:
    """When the last run ended, if the journal says."""
    ends = [entry.wall_ns for entry in entries if isinstance(entry, RunEnded)]
    return max(ends) if ends else None


def silence_slack_ms(run: RunStarted) -> int:
    """How long past the session timeout a silent broker may stay unfenced (see the module's rules):
    the run's, as its journal says."""
    return run.silence_slack


def pauses_of(entries: Iterable[Entry]) -> dict[int, list[tuple[int, int]]]:
    """Each broker's pauses (a `FaultInjected` "pause": its process stopped), as (start, end) in
    ms, in journal order."""
    pauses: dict[int, list[tuple[int, int]]] = {}
    for entry in entries:
        if isinstance(entry, FaultInjected) and entry.fault == "pause":
            start = entry.wall_ns // NS_PER_MS
            pauses.setdefault(entry.broker, []).append((start, start + int(entry.duration_ms)))
    return pauses


def due_after_pauses(pauses: Sequence[tuple[int, int]], at_ms: int, bound_ms: int) -> int:
    """When what a broker is owed from `at_ms` is due: `bound_ms` later, or `bound_ms` after the
    end of a pause of the broker that began before then and ended after `at_ms` (a stopped process
    reads nothing)."""
    due = at_ms + bound_ms
    for start, end in pauses:
        if start <= due and end > at_ms:
            due = max(due, end + bound_ms)
    return due


def run_covering(runs: Sequence[RunStarted], broker_id: int) -> RunStarted | None:
    """The run whose broker ids include `broker_id`, if any."""
    return next((run for run in runs if run.first_broker_id <= broker_id < run.first_broker_id + run.brokers), None)


def _silence_verdict(silence: Silence, run: RunStarted | None) -> str:
    timeout = run.session_timeout_ms if run is not None else 0
    waited = silence.deadline_ms - silence.fault.wall_ns // NS_PER_MS
    return (
        f"silent since its {silence.fault.fault} ({silence.fault.duration_ms / 1000:.1f} s), incarnation "
        f"{silence.epoch} was still unfenced {waited / 1000:.1f} s later "
        f"(session timeout {timeout} ms, as the fleet was told: --session-timeout-ms)"
    )


def _judge(model: Model, shutdown: ShutdownTracked) -> str | None:
    """None when the log excuses a late shutdown at its bound, else why it is a violation."""
    broker_id = shutdown.broker
    broker = model.brokers.get(broker_id)
    if broker is None or broker.epoch != shutdown.broker_epoch:
        return None  # a new incarnation (or none) by then: this one's shutdown is moot
    movable, stuck = [], []
    for partition in model.leads.get(broker_id, ()):
        if len(partition.replicas) <= 1:
            continue
        if any(
            replica != broker_id
            and replica in partition.isr
            and replica not in partition.offline
            and model.is_active(replica)
            for replica in partition.replicas
        ):
            movable.append(partition.label)
        else:
            stuck.append(partition.label)
    if movable:
        more = f" and {len(movable) - LISTED} more" if len(movable) > LISTED else ""
        led = ", ".join(sorted(movable)[:LISTED])
        return f"at the bound it still led {led}{more}, with an eligible successor in the ISR"
    if stuck:
        return None
    flagged = "" if broker.shutting_down or broker.fenced else " (the log never flagged it in controlled shutdown)"
    return f"at the bound it led nothing it could hand over, yet it was not let go{flagged}"


def _left_leading(model: Model, shutdown: ShutdownTracked) -> str | None:
    """What the incarnation still led (replication factor > 1) when its shutdown finished, or None."""
    broker = model.brokers.get(shutdown.broker)
    if broker is None or broker.epoch != shutdown.broker_epoch:
        return None  # a new incarnation by then
    led = sorted(p.label for p in model.leads.get(shutdown.broker, ()) if len(p.replicas) > 1)
    if not led:
        return None
    more = f" and {len(led) - LISTED} more" if len(led) > LISTED else ""
    return f"it still led {', '.join(led[:LISTED])}{more}"
