"""The real daemon with one safety check off: `python -m tests.broker_sim.broken_daemon --bug NAME ARGS`.

Each bug is a small patch of the controller's pure core applied before `controller.__main__.main`
runs, so everything else (wire, log, fsync, control channel) is the real daemon. The fleet, run
against one of these, must report a violation: that is how the suite proves the fleet and its
checker find bugs in a controller. The patches mimic plausible mistakes, one per rule of
semantics.md; the checks that must catch them are general (the fleet is judged against bugs it
has never seen), so nothing in broker_sim knows these names.

`BUGS` are a single controller's (test_fleet_finds_bugs.py); `QUORUM_BUGS` a controller quorum's,
patched into the Raft core (`controller.raft`) or its shell (`controller.server.quorum`,
the writer), run as every voter of the fleet's own quorum (`python -m broker_sim run --quorum 3
--controller-module tests.broker_sim.broken_daemon --controller-args "--bug NAME"`,
test_quorum_bugs.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from protocol.error_codes import ErrorCode


def admit_ineligible() -> None:
    """AlterPartition row h off: fenced, shutting-down, offline or stale-epoch replicas join ISRs."""
    from controller.ops import alter_partition

    original = alter_partition._check_partition

    def check(*args: Any) -> ErrorCode:
        code = original(*args)
        return ErrorCode.NONE if code in (ErrorCode.INELIGIBLE_REPLICA, ErrorCode.OPERATION_NOT_ATTEMPTED) else code

    alter_partition._check_partition = check


def stale_shutdown_epoch() -> None:
    """ControlledShutdown v2+ accepts any broker epoch (KIP-380 off): a replay shuts down a new incarnation."""
    from controller.ops import brokers

    def controlled_shutdown(state: Any, request: Any, version: int) -> Any:
        broker = state.cluster.get(request.broker_id)
        if broker is None:
            return original(state, request, version)
        return brokers._shut_down(state, broker)

    original = brokers.controlled_shutdown
    brokers.controlled_shutdown = controlled_shutdown  # the core's API table looks it up at each call


def stale_partition_epoch() -> None:
    """AlterPartition row e off: a change built on an older partition epoch is applied."""
    _skip_alter_partition_row(ErrorCode.INVALID_UPDATE_VERSION)


def stale_leader_epoch() -> None:
    """AlterPartition row c off: a deposed leader's change (older leader epoch, KIP-497) is applied."""
    _skip_alter_partition_row(ErrorCode.FENCED_LEADER_EPOCH)


def stale_broker_epoch() -> None:
    """AlterPartition ignores the requester's broker epoch: a previous incarnation's request is applied."""
    from controller.ops import alter_partition

    _ignore_broker_epoch(alter_partition, "alter_partition")


def no_leader_epoch_bump() -> None:
    """A leader change keeps the leader epoch: two leaders can claim the same epoch."""
    from controller.state import model

    original = model.PartitionRegistration.merge

    def merge(self: Any, change: Any) -> Any:
        merged = original(self, change)
        return merged if merged.leader_epoch == self.leader_epoch else _with_leader_epoch(merged, self.leader_epoch)

    model.PartitionRegistration.merge = merge  # type: ignore[method-assign]


def fenced_keeps_leadership() -> None:
    """Fencing writes only the broker's flag: a fenced broker keeps leading and stays in ISRs."""
    from controller.ops import brokers

    def fence(state: Any, broker: Any, first: Any = ()) -> Any:
        flag = brokers.BrokerRegistrationChangeRecord(broker_id=broker.broker_id, broker_epoch=broker.epoch, fenced=1)
        return iter([[*first, (flag, 0)]])

    brokers.fence = fence


def successor_outside_isr() -> None:
    """A leader leaving hands over to the first active replica, in the ISR or not (an unclean election)."""
    import dataclasses

    from controller.ops import brokers, replica_state
    from protocol.records.metadata import NO_LEADER_CHANGE

    original = brokers.removal

    def removal(tp: Any, part: Any, broker_id: int, eligible: Any, **options: Any) -> Any:
        change = original(tp, part, broker_id, eligible, **options)
        if change is None or part.leader != broker_id or change.leader == NO_LEADER_CHANGE:
            return change
        outside = next((r for r in part.replicas if r != broker_id and r not in part.isr and eligible(r)), None)
        return change if outside is None else dataclasses.replace(change, leader=outside)

    for module in (brokers, replica_state):
        module.removal = removal  # type: ignore[attr-defined]


def offline_stays_in_isr() -> None:
    """AlterReplicaState OFFLINE marks the replica lost but leaves it in the ISR and leading."""
    from controller.ops import replica_state
    from controller.ops.changes import change_record
    from protocol.records.metadata import LOST_DIRECTORY

    original = replica_state.removal

    def removal(tp: Any, part: Any, broker_id: int, eligible: Any, **options: Any) -> Any:
        if not options.get("offline"):
            return original(tp, part, broker_id, eligible, **options)
        directories = list(part.directories)
        directories[part.replicas.index(broker_id)] = LOST_DIRECTORY
        return change_record(tp, part, directories=tuple(directories))

    replica_state.removal = removal


def stale_replica_state_epoch() -> None:
    """AlterReplicaState ignores the broker epoch: an old incarnation's OFFLINE report takes replicas down."""
    from controller.ops import replica_state

    _ignore_broker_epoch(replica_state, "alter_replica_state")


def forget_acknowledged() -> None:
    """AlterPartition answers NONE with the new state but writes no record: an acknowledged change is lost."""
    from controller.ops import alter_partition

    original = alter_partition.records_of
    alter_partition.records_of = lambda changes: original([])


def shutdown_lets_go_leading() -> None:
    """ControlledShutdown flags the broker but moves no leadership, and answers nothing remaining."""
    from controller.ops import brokers

    def controlled_shutdown(state: Any, request: Any, version: int) -> Any:
        outcome = original(state, request, version)
        if isinstance(outcome, brokers.Result):
            return outcome
        return flag_only(state, state.cluster.get(request.broker_id))

    def flag_only(state: Any, broker: Any) -> Any:
        flags = brokers._shutdown_flag(broker)
        if flags:
            yield [*flags]
        return brokers.ControlledShutdownResponse()

    original = brokers.controlled_shutdown
    brokers.controlled_shutdown = controlled_shutdown  # the core's API table looks it up at each call


def no_session_expiry() -> None:
    """Sessions never expire: a crashed or paused broker stays unfenced, leading and in its ISRs."""
    from controller.ops import brokers

    brokers.expired_session = lambda state, now_ns: None


def unfence_not_caught_up() -> None:
    """A fenced broker is unfenced by its first heartbeat, caught up or not (its metadata offset ignored)."""
    import dataclasses

    from controller.ops import brokers

    original = brokers.heartbeat

    def heartbeat(state: Any, request: Any, now_ns: int) -> Any:
        broker = state.cluster.get(request.broker_id)
        if broker is not None and request.current_metadata_offset < broker.epoch:
            request = dataclasses.replace(request, current_metadata_offset=broker.epoch)
        return original(state, request, now_ns)

    brokers.heartbeat = heartbeat


def lai_leader_only() -> None:
    """A change of the ISR alone (leader and replicas' directories kept) sends no LeaderAndIsr."""
    from controller.control import orders

    original = orders.OutboundCollector._partition_changed

    def changed(self: Any, replaced: Any) -> None:
        _, _, before, after = replaced
        if before is not None and before.leader == after.leader and before.directories is after.directories:
            return
        original(self, replaced)

    orders.OutboundCollector._partition_changed = changed  # type: ignore[method-assign]


def follower_alters_isr() -> None:
    """AlterPartition row d off: a follower holding the current leader and partition epochs rewrites
    the partition's ISR (only its leader may: INVALID_REQUEST)."""
    from controller.ops import alter_partition

    original = alter_partition._check_partition

    def check(state: Any, requester: int, part: Any, part_request: Any, version: int) -> ErrorCode:
        epochs = (part_request.leader_epoch, part_request.partition_epoch)
        current = epochs == (part.leader_epoch, part.partition_epoch)
        if current and requester != part.leader and part.leader >= 0:
            return original(state, part.leader, part, part_request, version)  # judged as if the leader asked
        return original(state, requester, part, part_request, version)

    alter_partition._check_partition = check


def isr_non_replica() -> None:
    """AlterPartition row f half off: an ISR naming a broker that holds no replica of the partition
    is accepted (duplicates, negative ids and a missing leader are still refused)."""
    import dataclasses

    from controller.ops import alter_partition

    original = alter_partition._check_partition

    def check(state: Any, requester: int, part: Any, part_request: Any, version: int) -> ErrorCode:
        code = original(state, requester, part, part_request, version)
        ids = [broker_id for broker_id, _ in alter_partition._new_isr(part_request, version)]
        strangers = [b for b in ids if b >= 0 and b not in part.replicas]
        if code != ErrorCode.INVALID_REQUEST or not strangers or len(set(ids)) != len(ids):
            return code
        kept = [b for b in ids if b not in strangers]
        if version >= 3:
            members = tuple(m for m in part_request.new_isr_with_epochs if m.broker_id in kept)
            trimmed = dataclasses.replace(part_request, new_isr_with_epochs=members)
        else:
            trimmed = dataclasses.replace(part_request, new_isr=tuple(kept))
        return original(state, requester, part, trimmed, version)  # the strangers are never looked at

    alter_partition._check_partition = check


def no_stop_replica_on_delete() -> None:
    """DeleteTopics removes the topic from the log but sends no StopReplica(delete=true): the
    deleted topic's replicas go on serving it."""
    from controller.control import orders
    from protocol.records.metadata import RemoveTopicRecord

    original = orders.OutboundCollector.after

    def after(self: Any, record: Any, replaced: Any) -> None:
        if isinstance(record, RemoveTopicRecord):
            self._removed = []
        original(self, record, replaced)

    orders.OutboundCollector.after = after  # type: ignore[method-assign]


# ---------------------------------------------------------------------- the quorum's
def answer_before_commit() -> None:
    """The leader answers once its own fsync is done: `committed` no longer waits for the high
    watermark (a majority's), so a leader cut off or killed has acknowledged what never commits."""
    from controller.server import quorum

    async def committed(self: Any, end_offset: int) -> bool:
        if self._leader_epoch() is None or not self.driver.lease_holds(self.node.state):
            return False
        self.driver.flushed(end_offset)
        return True

    quorum.Quorum.committed = committed  # type: ignore[method-assign]


def vote_for_shorter_log() -> None:
    """Votes and pre-votes skip the up-to-date check: a candidate whose log lacks committed entries
    can win, and its followers then truncate them away."""
    from controller.raft import inbound

    original = inbound.can_grant

    def can_grant(state: Any, candidate_id: Any, up_to_date: bool, pre_vote: bool) -> bool:
        return original(state, candidate_id, True, pre_vote)

    inbound.can_grant = can_grant  # `vote` looks it up at each call


def keep_divergent_tail() -> None:
    """A follower ignores the leader's DivergingEpoch (an answer of no use, fetched again from the
    same place after a backoff): it keeps its divergent tail and never catches up."""
    from controller.raft import outbound

    original = outbound.fetch

    def fetch(node: Any, now_ms: int, response: Any) -> bool:
        if response.diverging_epoch is not None:
            return False
        return bool(original(node, now_ms, response))

    outbound.fetch = fetch  # `read` looks it up at each call


def leader_never_resigns() -> None:
    """Check-quorum off, and the lease with it: a leader cut off from the other voters goes on
    leading its epoch (and answering) until it hears of a newer one."""
    from controller.raft import leader
    from controller.server import raft_driver

    leader.check_quorum_timeout_ms = lambda fetch_timeout_ms: 1 << 50  # `Leader` looks it up at each fetch
    raft_driver.RaftDriver.lease_holds = lambda self, state: True  # type: ignore[method-assign]


def old_controller_epoch() -> None:
    """A new leader's LeaderAndIsr and StopReplica keep the controller epoch of the leader before
    it (the newest LeaderChange below its own), not its Raft epoch."""
    import dataclasses

    from controller import core, engine
    from controller.control import orders
    from protocol.records.control import LeaderChangeMessage

    epochs: set[int] = set()
    make_replayers = core.ControllerCore._make_replayers

    def replayers(self: Any) -> Any:
        table = make_replayers(self)
        replay = table[LeaderChangeMessage]

        def leader_change(record: Any, epoch: int) -> Any:
            epochs.add(epoch)
            return replay(record, epoch)

        table[LeaderChangeMessage] = leader_change
        return table

    core.ControllerCore._make_replayers = replayers  # type: ignore[method-assign]

    def older_epoch(out: Any, controller_epoch: int) -> Any:
        older = [epoch for epoch in epochs if epoch < controller_epoch]
        if not older:
            return out
        return [dataclasses.replace(order, controller_epoch=max(older)) for order in out]

    collected = orders.OutboundCollector.orders

    def stamped(self: Any) -> Any:
        return older_epoch(collected(self), self.state.controller_epoch)

    full = engine.full_state_orders

    def full_stamped(frozen: Any) -> Any:  # the full state a new leader sends first
        return older_epoch((yield from full(frozen)), frozen.controller_epoch)

    orders.OutboundCollector.orders = stamped  # type: ignore[method-assign]
    engine.full_state_orders = full_stamped  # `ControllerEngine.full_state_orders` looks it up at each call


def follower_answers() -> None:
    """A standby decides broker and admin requests on its own (committed) state and answers them,
    where it must answer NOT_CONTROLLER: nothing it decides is written, let alone committed."""
    import time

    from controller.server import writer
    from controller.state.controller_state import Result

    engines: list[Any] = []
    init = writer.Writer.__init__

    def remember(self: Any, engine: Any, *args: Any, **options: Any) -> None:
        init(self, engine, *args, **options)
        engines.append(engine)

    original = writer.not_controller

    def decided_anyway(api_key: int, version: int, body: Any, leader: Any) -> Any:
        engine = engines[-1]
        outcome = engine.core.handle(api_key, version, body, time.monotonic_ns(), engine.log.next_offset)
        if type(outcome) is Result:
            return outcome.response  # its records are dropped: never written
        try:  # an operation in steps: every batch decided and dropped, its answer kept
            while True:
                next(outcome)
        except StopIteration as stop:
            return stop.value
        except Exception:  # a later step needed the earlier ones applied: the standby's usual answer
            return original(api_key, version, body, leader)

    writer.Writer.__init__ = remember  # type: ignore[method-assign]
    writer.not_controller = decided_anyway  # the writer looks it up for every standby answer


BUGS: dict[str, Callable[[], None]] = {
    "admit-ineligible": admit_ineligible,
    "stale-shutdown-epoch": stale_shutdown_epoch,
    "stale-partition-epoch": stale_partition_epoch,
    "stale-leader-epoch": stale_leader_epoch,
    "stale-broker-epoch": stale_broker_epoch,
    "no-leader-epoch-bump": no_leader_epoch_bump,
    "fenced-keeps-leadership": fenced_keeps_leadership,
    "successor-outside-isr": successor_outside_isr,
    "offline-stays-in-isr": offline_stays_in_isr,
    "stale-replica-state-epoch": stale_replica_state_epoch,
    "forget-acknowledged": forget_acknowledged,
    "shutdown-lets-go-leading": shutdown_lets_go_leading,
    "no-session-expiry": no_session_expiry,
    "unfence-not-caught-up": unfence_not_caught_up,
    "lai-leader-only": lai_leader_only,
    "follower-alters-isr": follower_alters_isr,
    "isr-non-replica": isr_non_replica,
    "no-stop-replica-on-delete": no_stop_replica_on_delete,
}
#: the bugs of a controller quorum: run with several voters (`--quorum N`)
QUORUM_BUGS: dict[str, Callable[[], None]] = {
    "answer-before-commit": answer_before_commit,
    "vote-for-shorter-log": vote_for_shorter_log,
    "keep-divergent-tail": keep_divergent_tail,
    "leader-never-resigns": leader_never_resigns,
    "old-controller-epoch": old_controller_epoch,
    "follower-answers": follower_answers,
}
ALL_BUGS = {**BUGS, **QUORUM_BUGS}


def _skip_alter_partition_row(skipped: ErrorCode) -> None:
    """AlterPartition with one row of its table switched off: the later rows still run."""
    from controller.ops import alter_partition

    original = alter_partition._check_partition

    def check(state: Any, requester: int, part: Any, part_request: Any, version: int) -> ErrorCode:
        code = original(state, requester, part, part_request, version)
        if code != skipped:
            return code
        current = _request_at(part_request, part.leader_epoch, part.partition_epoch)
        return original(state, requester, part, current, version)

    alter_partition._check_partition = check


class _AnyEpoch:
    """The cluster state, except that every registered broker's epoch matches."""

    def __init__(self, cluster: Any) -> None:
        self._cluster = cluster

    def epoch_matches(self, broker_id: int, epoch: int) -> bool:
        return broker_id in self._cluster.brokers

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cluster, name)


def _ignore_broker_epoch(module: Any, name: str) -> None:
    """`module.name(state, request, version)` decided as if the request's broker epoch were current."""
    original = getattr(module, name)

    def operation(state: Any, request: Any, version: int) -> Any:
        real = state.cluster
        state.cluster = _AnyEpoch(real)
        try:
            return original(state, request, version)
        finally:
            state.cluster = real

    setattr(module, name, operation)  # the core's API table looks it up at each call


def _request_at(part_request: Any, leader_epoch: int, partition_epoch: int) -> Any:
    import dataclasses

    return dataclasses.replace(part_request, leader_epoch=leader_epoch, partition_epoch=partition_epoch)


def _with_leader_epoch(part: Any, leader_epoch: int) -> Any:
    from controller.state import model

    return model._new_partition(
        (
            part.replicas,
            part.isr,
            part.leader,
            leader_epoch,
            part.partition_epoch,
            part.leader_recovery_state,
            part.directories,
        )
    )


def main(argv: list[str]) -> int:
    """The daemon's own arguments, plus `--bug NAME` anywhere among them."""
    if "--bug" not in argv[:-1] or argv[argv.index("--bug") + 1] not in ALL_BUGS:
        print(
            f"usage: python -m tests.broker_sim.broken_daemon --bug {{{','.join(ALL_BUGS)}}} DAEMON-ARGS",
            file=sys.stderr,
        )
        return 2
    at = argv.index("--bug")
    ALL_BUGS[argv[at + 1]]()
    from controller.__main__ import main as daemon_main

    return daemon_main(argv[:at] + argv[at + 2 :])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
