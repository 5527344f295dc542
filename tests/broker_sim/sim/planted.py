"""Bugs planted in the controller the simulator runs in its own process (`python -m broker_sim sim
--patch tests.broker_sim.sim.planted:NAME`): bugs of the failover path that the wall-clock fleet does
not see. Nothing in broker_sim knows them."""

from __future__ import annotations

import dataclasses
from typing import Any


def fetch_timer_never_reset() -> None:
    """A follower's fetch timer is not reset by a successful fetch: it times out one fetch timeout
    after it began following, and deposes its healthy leader, over and over."""
    from controller.raft import outbound

    original = outbound.fetch

    def fetch(node: Any, now_ms: int, response: Any) -> bool:
        deadline = getattr(node.state, "fetch_deadline_ms", None)
        handled: bool = original(node, now_ms, response)
        if deadline is not None and hasattr(node.state, "fetch_deadline_ms"):
            node.state = dataclasses.replace(node.state, fetch_deadline_ms=deadline)
        return handled

    outbound.fetch = fetch


def activation_on_a_wrong_clock() -> None:
    """KAFKA-14392: a new active controller starts every broker's session from a time a minute
    back, so its first session sweep fences every live broker (and their next heartbeats unfence
    them: no broker is ever answered fenced)."""
    from controller.engine import ControllerEngine

    original = ControllerEngine.activate

    def activate(self: Any, now_ns: int) -> None:
        original(self, now_ns - 60_000_000_000)

    ControllerEngine.activate = activate  # type: ignore[method-assign]


def high_watermark_of_the_leader_alone() -> None:
    """A leader counts only its own log for the high watermark: it commits what no follower holds."""
    from controller.raft.leader import Leader

    def majority_offset(self: Any, local_flushed_end: int) -> int | None:
        return local_flushed_end

    Leader.majority_offset = majority_offset  # type: ignore[method-assign]


def election_not_persisted() -> None:
    """The quorum-state file is never written: a restarted voter forgets its epoch and its vote."""
    from controller.server import raft_driver

    async def persist(self: Any, election: Any) -> None:
        return None

    raft_driver.RaftDriver._persist = persist  # type: ignore[method-assign]


def vote_granted_twice() -> None:
    """A voter that voted in an epoch grants its vote again to another candidate of that epoch."""
    from controller.raft import inbound

    original = inbound.can_grant

    def can_grant(state: Any, candidate_id: Any, up_to_date: bool, pre_vote: bool) -> bool:
        if getattr(state, "voted_id", None) is not None and up_to_date and not pre_vote:
            return True
        return original(state, candidate_id, up_to_date, pre_vote)

    inbound.can_grant = can_grant


def vote_for_a_stale_log() -> None:
    """A voter grants its vote whatever the candidate's log: a candidate missing committed entries wins."""
    from controller.raft import inbound

    original = inbound.can_grant

    def can_grant(state: Any, candidate_id: Any, up_to_date: bool, pre_vote: bool) -> bool:
        return original(state, candidate_id, True, pre_vote)

    inbound.can_grant = can_grant


def _unclean_patch(rewrite: Any) -> None:
    """Wrap the ElectLeaders decision of one partition: `rewrite(state, topic, index, code, change)`
    gives what an UNCLEAN election that the real one granted returns instead."""
    from controller.ops import elections

    original = elections._elect

    def _elect(state: Any, name: str, index: int, election: int) -> Any:
        code, change = original(state, name, index, election)
        if election != elections.UNCLEAN or change is None:
            return code, change
        return rewrite(state, state.replication.topic_by_name(name), index, code, change)

    elections._elect = _elect


def unclean_elects_the_last_eligible() -> None:
    """An unclean election makes the last eligible replica leader, not the first in assignment order."""
    from controller.ops.changes import change_record, eligible
    from controller.state.model import RECOVERING, TopicPartition

    def rewrite(state: Any, topic: Any, index: int, code: Any, change: Any) -> Any:
        part = topic.partitions[index]
        leader = [replica for replica in part.replicas if eligible(state, part, replica)][-1]
        tp = TopicPartition(topic.topic_id, index)
        return code, change_record(tp, part, leader=leader, isr=(leader,), leader_recovery_state=RECOVERING)

    _unclean_patch(rewrite)


def unclean_without_recovery() -> None:
    """An unclean election leaves the leader recovery state RECOVERED (KIP-704 says RECOVERING)."""
    from controller.ops.changes import change_record
    from controller.state.model import TopicPartition

    def rewrite(state: Any, topic: Any, index: int, code: Any, change: Any) -> Any:
        part = topic.partitions[index]
        tp = TopicPartition(topic.topic_id, index)
        return code, change_record(tp, part, leader=change.leader, isr=(change.leader,))

    _unclean_patch(rewrite)


def unclean_answered_not_written() -> None:
    """An unclean election is answered NONE, but its record is never written."""
    _unclean_patch(lambda state, topic, index, code, change: (code, None))


def unclean_never_elects() -> None:
    """An unclean election that a replica could win is refused ELIGIBLE_LEADERS_NOT_AVAILABLE."""
    from protocol.error_codes import ErrorCode

    _unclean_patch(lambda state, topic, index, code, change: (ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, None))


def segments_never_fsynced() -> None:
    """The log writes its batches and never fsyncs them (as a controller run without fsync): what it
    acknowledges, and what its followers report as fetched, is lost when a machine crashes."""
    import types

    from controller.log import store

    store.runtime = types.SimpleNamespace(fsync=lambda fd: None)  # type: ignore[assignment]


def transaction_left_open() -> None:
    """An operation over more batches than the record cap allows is written after its
    BeginTransactionRecord and never closed by its EndTransactionRecord: the writer applied it, a
    standby replaying the log meets the next Begin inside the open transaction."""
    from controller.ops import batches
    from protocol.records.metadata import EndTransactionRecord

    original = batches.in_transaction

    def in_transaction(name: str, steps: Any) -> Any:
        inner = original(name, steps)
        while True:
            try:
                batch = next(inner)
            except StopIteration as stop:
                return stop.value
            if not _ends(batch):
                yield batch

    def _ends(batch: Any) -> bool:
        return len(batch) == 1 and isinstance(batch[0][0], EndTransactionRecord)

    batches.in_transaction = in_transaction  # type: ignore[assignment]


def stop_replica_without_broker_epoch() -> None:
    """StopReplica goes out naming no broker epoch (-1) at every version that carries one: a
    bounced broker cannot tell a stop meant for its previous incarnation, and accepts it."""
    from controller.control import links

    original = links.stop_replica_requests

    def stop_replica_requests(order: Any, version: int) -> Any:
        return [dataclasses.replace(request, broker_epoch=-1) for request in original(order, version)]

    links.stop_replica_requests = stop_replica_requests


def placement_repeats_a_broker() -> None:
    """The replica placement steps over every broker, the first one included (modulo the broker
    count where Kafka's striping takes it modulo one less): a partition may name a broker twice."""
    from controller.ops import placement

    def _replica_index(first: int, shift: int, replica: int, count: int) -> int:
        return (first + 1 + (shift + replica) % count) % count

    placement._replica_index = _replica_index


def a_factor_of_one_taken_for_the_default() -> None:
    """A topic placed at replication factor 1 gets the controller's default factor instead (the
    placement's `-1` test written `== 1`): invisible under Kafka's default of 1."""
    from controller.ops import topics

    original = topics._assignments

    def _assignments(state: Any, topic: Any, rng: Any) -> Any:
        if topic.replication_factor == 1 and not topic.assignments:
            topic = dataclasses.replace(topic, replication_factor=-1)
        return original(state, topic, rng)

    topics._assignments = _assignments


def online_taken_for_offline() -> None:
    """An AlterReplicaState ONLINE is decided as OFFLINE (`new_state >= OFFLINE`, ONLINE being 2):
    a repaired replica stays offline, answered NONE."""
    from controller.ops import replica_state

    original = replica_state._one

    def _one(state: Any, tp: Any, broker_id: int, new_state: int, duplicate: bool) -> Any:
        return original(state, tp, broker_id, min(new_state, replica_state.OFFLINE), duplicate)

    replica_state._one = _one


def preferred_election_not_written() -> None:
    """A PREFERRED election is answered NONE and its change (the leader alone) never written: the
    elections module takes a leader-only change for a no-op."""
    from controller.ops import elections

    original = elections._elect

    def _elect(state: Any, name: str, index: int, election: int) -> Any:
        code, change = original(state, name, index, election)
        return code, (None if change is not None and election == 0 and change.isr is None else change)

    elections._elect = _elect


def partition_change_never_a_noop() -> None:
    """A partition change that changes nothing is written all the same (a record with every field
    "unchanged"), where Kafka's PartitionChangeBuilder writes none."""
    from controller.ops import alter_partition, brokers, changes, elections
    from protocol.records.metadata import PartitionChangeRecord

    original = changes.change_record

    def change_record(tp: Any, current: Any, **targets: Any) -> Any:
        found = original(tp, current, **targets)
        return found if found is not None else PartitionChangeRecord(partition_id=tp.partition, topic_id=tp.topic_id)

    for module in (changes, alter_partition, brokers, elections):
        module.change_record = change_record  # type: ignore[attr-defined]


def pieces_never_advance() -> None:
    """A request over more partitions than one step is cut into pieces whose cut never moves on: the
    controller decides the first piece again and again, without yielding, for ever (a loop the
    simulated clock cannot leave)."""
    from controller.ops import batches

    def pieces(topics: Any, size: int) -> Any:
        while True:
            yield [(position, topic) for position, topic in enumerate(topics)][:1]

    batches.pieces = pieces
