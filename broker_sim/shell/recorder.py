"""Where the shell writes what happened: live counters (`FleetStats`), the journal and the capture.

Rules: journal entries carry the wall clock when they are written (`now_ns`, `wall_ns()`),
so that entries of several processes share one timeline; the model times an event carries (a
controlled shutdown's start and end: seconds since the fleet started, monotonic) become
wall-clock nanoseconds as `wall0_ns + t`. Counters: every answered request by API name, its top-level error and
each partition error as "Api:ERROR_NAME"; requests without an answer as "Api:NETWORK_EXCEPTION"
(Kafka's name for it); latencies in milliseconds; moves to the next controller of the list by
reason. Journal entries are written as they happen and flushed by the fleet's ticker about once a
second. The fleet's own quorum (`--quorum`): each action on a node (counted by action), each new
leader seen, and each failover measured (journalled, and kept in the stats as `failover_record`
makes it: times in milliseconds, rounded to 0.1).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from broker_sim import journal
from broker_sim.model import events as ev
from broker_sim.model.answers import answer_label, nested_errors
from broker_sim.model.quorum import Failover, LeaderView
from broker_sim.stats import FleetStats
from protocol.error_codes import error_name
from protocol.registry import api
from protocol.spec import Data

from .capture import FleetCapture
from .runtime import wall_ns

NETWORK_EXCEPTION = "NETWORK_EXCEPTION"


def api_name(api_key: int) -> str:
    return api(api_key).name


class Recorder:
    def __init__(
        self,
        stats: FleetStats,
        writer: journal.JournalWriter | None,
        capture: FleetCapture | None,
        t0: float,
        wall0_ns: int,
    ) -> None:
        self.stats = stats
        self.writer = writer
        self.capture = capture
        self.t0 = t0
        self.wall0_ns = wall0_ns

    def wall_ns(self, t: float) -> int:
        return self.wall0_ns + int(t * 1e9)

    def now_ns(self) -> int:
        return wall_ns()

    def write(self, entry: journal.Entry) -> None:
        if self.writer is not None:
            self.writer.write(entry)

    # ------------------------------------------------------------------ requests
    def answered(self, api_key: int, latency_s: float, response: Data) -> None:
        name = api_name(api_key)
        top = getattr(response, "error_code", 0)
        self.stats.request(name, latency_s * 1000, error_name(top) if top else None)
        for code in nested_errors(response):
            if code:
                self.stats.errors_by_code[f"{name}:{error_name(code)}"] += 1

    def lost(self, api_key: int) -> None:
        self.stats.request(api_name(api_key), None, NETWORK_EXCEPTION)

    def controller_switched(
        self, broker: int, channel: str, before: str, after: str, reason: str, api_name: str, detail: str
    ) -> None:
        """A connection moved to the next controller of the list (`connection`; broker -1: the admin)."""
        self.stats.controller_switches[reason] += 1
        self.write(journal.ControllerSwitched(self.now_ns(), broker, channel, before, after, reason, api_name, detail))

    def bad_answer(self, broker: int, api_key: int, version: int, correlation_id: int, reason: str) -> None:
        self.stats.request(api_name(api_key), None, "BAD_ANSWER")
        self.write(journal.BadAnswer(self.now_ns(), broker, api_name(api_key), version, correlation_id, reason))

    # ------------------------------------------------------------------ model events
    def events(self, broker: int, events: Iterable[ev.Event], correlation_id: int = 0) -> None:
        for event in events:
            self._event(broker, event, correlation_id)

    def _event(self, broker: int, event: ev.Event, correlation_id: int) -> None:
        now = self.now_ns()
        if isinstance(event, ev.Registered):
            dirs = [str(log_dir) for log_dir in event.log_dirs]
            self.write(journal.Registered(now, broker, str(event.incarnation_id), event.broker_epoch, dirs))
        elif isinstance(event, ev.FencedSeen):
            gap_ms = event.longest_gap_s * 1000
            self.write(journal.Fenced(now, broker, event.broker_epoch, event.intended, gap_ms))
        elif isinstance(event, ev.Unfenced):
            self.write(journal.UnfencedSeen(now, broker, event.broker_epoch))
        elif isinstance(event, ev.PartitionAcked):
            self._acked(now, broker, event)
        elif isinstance(event, ev.ShutdownEnded):
            self._shutdown(broker, event)
        elif isinstance(event, ev.StaleAnswered):
            self._stale(now, broker, event, correlation_id)
        elif isinstance(event, ev.ProbeAnswered):
            self._probe(now, broker, event)
        elif isinstance(event, ev.RequestProbeAnswered):
            self._request_probe(now, broker, event)
        elif isinstance(event, ev.ReplicaStateAnswered):
            replicas = [list(replica) for replica in event.replicas]
            sent = self.wall_ns(event.sent)
            answered = journal.ReplicaStateAnswered(
                now, sent, broker, event.broker_epoch, event.version, event.new_state, replicas, list(event.errors)
            )
            self.write(answered)
        elif isinstance(event, ev.ShapeProblem):
            self.bad_answer(broker, event.api_key, event.version, correlation_id, event.reason)

    def _acked(self, now: int, broker: int, event: ev.PartitionAcked) -> None:
        proposal = event.proposal
        self.write(
            journal.PartitionAcked(
                wall_ns=now,
                broker=broker,
                broker_epoch=event.broker_epoch,
                api_version=event.version,
                topic_id=str(proposal.topic_id),
                partition=proposal.partition,
                requested_isr=list(proposal.isr),
                member_epochs=list(proposal.member_epochs) if event.version >= 3 else [],
                leader=event.leader,
                leader_epoch=event.leader_epoch,
                partition_epoch=event.partition_epoch,
                isr=list(event.isr),
            )
        )

    def _shutdown(self, broker: int, event: ev.ShutdownEnded) -> None:
        via = "heartbeat" if event.via == "heartbeat" else f"ControlledShutdown v{event.version}"
        finished = None if event.finished is None else self.wall_ns(event.finished)
        self.write(
            journal.ShutdownTracked(
                broker, event.broker_epoch, via, self.wall_ns(event.started), finished, event.attempts
            )
        )

    def _stale(self, now: int, broker: int, event: ev.StaleAnswered, correlation_id: int) -> None:
        plan = event.plan
        self.stats.stale_replays_sent += 1
        if event.errors and not event.accepted:
            self.stats.stale_replays_rejected += 1
        self.write(
            journal.StaleReplay(
                wall_ns=now,
                broker=broker,
                api=api_name(plan.api_key),
                api_version=plan.version,
                reason=plan.reason,
                stale_broker_epoch=plan.stale_broker_epoch,
                current_broker_epoch=event.current_broker_epoch,
                correlation_id=correlation_id,
                errors=list(event.errors),
                accepted=event.accepted,
                detail=dict(plan.detail),
            )
        )

    def _probe(self, now: int, broker: int, event: ev.ProbeAnswered) -> None:
        errors = list(event.errors)
        answer = answer_label(errors)
        self.stats.probes[f"{event.target.why}:{answer}"] += 1
        self.write(
            journal.Probe(
                wall_ns=now,
                broker=broker,
                api_version=event.version,
                why=event.target.why,
                topic_id=str(event.proposal.topic_id),
                partition=event.proposal.partition,
                follower=event.target.follower,
                member_epoch=event.target.member_epoch,
                errors=errors,
            )
        )

    def _request_probe(self, now: int, broker: int, event: ev.RequestProbeAnswered) -> None:
        plan = event.plan
        errors = list(event.errors)
        answer = answer_label(errors)
        self.stats.probes[f"request:{plan.probe}:{answer}"] += 1
        self.write(
            journal.RequestProbe(
                wall_ns=now,
                broker=broker,
                broker_epoch=plan.broker_epoch,
                api=api_name(plan.api_key),
                api_version=plan.version,
                probe=plan.probe,
                errors=errors,
                accepted=event.accepted,
                detail=dict(plan.detail),
            )
        )

    def fault(self, broker: int, kind: str, duration_s: float) -> None:
        self.stats.faults[kind] += 1
        self.write(journal.FaultInjected(self.now_ns(), broker, kind, duration_s * 1000))

    # ------------------------------------------------------------------ the fleet's own quorum
    def controller_fault(self, node: int, fault: str, duration_s: float, leader: LeaderView | None) -> None:
        self.stats.controller_faults[fault] += 1
        leader_id, epoch = (-1, -1) if leader is None else (leader.leader_id, leader.leader_epoch)
        self.write(journal.ControllerFaulted(self.now_ns(), node, fault, duration_s * 1000, leader_id, epoch))

    def quorum_leader(self, view: LeaderView) -> None:
        self.write(journal.QuorumLeaderSeen(self.now_ns(), view.leader_id, view.leader_epoch, view.high_watermark))

    def quorum_started(self, nodes: list[int], election_timeout_s: float, fetch_timeout_s: float) -> None:
        election_ms, fetch_ms = round(election_timeout_s * 1000), round(fetch_timeout_s * 1000)
        self.write(journal.QuorumStarted(self.now_ns(), list(nodes), election_ms, fetch_ms))

    def quorum_leaders(self, claims: list[tuple[int, int]]) -> None:
        """The nodes that answered a round of DescribeQuorum as a leader, (node, epoch), changed."""
        self.write(journal.QuorumLeadersSeen(self.now_ns(), [[node, epoch] for node, epoch in claims]))

    def failover(self, failover: Failover) -> None:
        entry = failover_entry(failover, self.wall_ns(failover.at))
        self.stats.failovers.append(failover_record(entry))
        self.write(entry)


def failover_entry(failover: Failover, wall_ns: int) -> journal.FailoverMeasured:
    before, after = failover.leader, failover.new_leader
    return journal.FailoverMeasured(
        wall_ns=wall_ns,
        node=failover.node,
        fault=failover.fault,
        role=failover.role,
        leader=-1 if before is None else before.leader_id,
        leader_epoch=-1 if before is None else before.leader_epoch,
        new_leader=-1 if after is None else after.leader_id,
        new_leader_epoch=-1 if after is None else after.leader_epoch,
        elected_ms=_ms(failover.elected_s),
        served_ms=_ms(failover.served_s),
    )


def failover_record(entry: journal.FailoverMeasured) -> dict[str, Any]:
    """A failover as the stats and the report keep it: the journal entry's fields but its kind."""
    return {name: getattr(entry, name) for name in journal.field_names(entry)}


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)
