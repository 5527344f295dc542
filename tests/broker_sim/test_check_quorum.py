"""The checker over a controller quorum: several nodes' data dirs, the committed log picked from
them, the single-log rules on it, and the quorum's rules (broker_sim/check/quorum.py, quorum_rules.py).

The nodes' logs are written by the controller's own `MetadataLog` (fsync off), the same batches on each
node that holds them (a follower's copy is byte for byte the leader's); what the writer refuses (an epoch
going down) is appended as raw batches with `protocol`'s batch writer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from broker_sim.check import RULES
from broker_sim.check.cli import main
from broker_sim.check.quorum import QuorumResult, check_quorum
from broker_sim.journal import (
    ControllerEpochSeen,
    ControllerFaulted,
    ControlSenderSeen,
    Entry,
    PartitionAcked,
    QuorumLeadersSeen,
    QuorumStarted,
    Registered,
    RunEnded,
    StateObserved,
    VoteProbed,
)
from controller.log import MetadataLog
from protocol.records.batch_writer import metadata_batch
from protocol.records.metadata import (
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    latest_version,
)
from protocol.records.metadata_value import encode_metadata_value
from protocol.spec import Data

from .check.logs import PARTITION_DIR, TIMESTAMP_MS, TOPIC_ID, incarnation

CLUSTER_ID = "fencer-quorum-check"
BROKERS = (1, 2, 3, 4)
QUORUM_RULES = [rule for rule in RULES if rule.startswith("quorum-")] + ["stale-controller-epoch"]


def broker_epoch(broker: int) -> int:
    return 100 + broker


class Quorum:
    """The data dirs of a quorum's nodes, each a real `MetadataLog`; `on` names the nodes that get a batch."""

    def __init__(self, root: Path, nodes: Sequence[int] = (1, 2, 3)) -> None:
        self.dirs = {node: root / f"node-{node}" for node in nodes}
        self.logs = {
            node: MetadataLog.open(path, cluster_id=CLUSTER_ID, node_id=node, fsync=False)
            for node, path in self.dirs.items()
        }
        self.timestamp_ms = TIMESTAMP_MS

    def _stamp(self, timestamp_ms: int | None) -> int:
        self.timestamp_ms += 10
        return self.timestamp_ms if timestamp_ms is None else timestamp_ms

    def elect(self, epoch: int, leader: int, on: Iterable[int], *, timestamp_ms: int | None = None) -> int:
        """The LeaderChange of `epoch` naming `leader`, on nodes `on`; its offset."""
        stamp = self._stamp(timestamp_ms)
        offsets = [self.logs[node].append_leader_change(epoch, leader, stamp) for node in on]
        return offsets[0]

    def append(self, *records: Data, on: Iterable[int], timestamp_ms: int | None = None) -> int:
        """One batch of `records` at each node's current epoch; its offset."""
        stamp = self._stamp(timestamp_ms)
        group = [(record, latest_version(type(record))) for record in records]
        offsets = [self.logs[node].append([group], self.logs[node].last_epoch, stamp)[0] for node in on]
        return offsets[0]

    def cluster(self, leader: int = 1) -> None:
        """Epoch 1 led by `leader`, on every node: brokers 1-4 registered and unfenced, topic `t` with
        partitions 0 ([1, 2, 3]) and 1 ([2, 3, 4]), every replica in the ISR, led by the first."""
        every = list(self.logs)
        self.elect(1, leader, every)
        for broker in BROKERS:
            self.append(register(broker), on=every)
        for broker in BROKERS:
            self.append(
                BrokerRegistrationChangeRecord(broker_id=broker, broker_epoch=broker_epoch(broker), fenced=-1), on=every
            )
        self.append(
            TopicRecord(name="t", topic_id=TOPIC_ID),
            partition(0, (1, 2, 3)),
            partition(1, (2, 3, 4)),
            on=every,
        )

    def close(self) -> list[Path]:
        for log in self.logs.values():
            log.close()
        return list(self.dirs.values())

    def check(self, journal: list[Entry] | None = None) -> QuorumResult:
        return check_quorum(self.close(), journal)


def register(broker: int, generation: int = 0, epoch: int | None = None) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker,
        incarnation_id=incarnation(broker, generation),
        broker_epoch=broker_epoch(broker) if epoch is None else epoch,
        fenced=True,
    )


def partition(index: int, replicas: tuple[int, ...]) -> PartitionRecord:
    return PartitionRecord(
        partition_id=index, topic_id=TOPIC_ID, replicas=replicas, isr=replicas, leader=replicas[0], leader_epoch=0,
        partition_epoch=0,
    )  # fmt: skip


def shrink(isr: tuple[int, ...], index: int = 0) -> PartitionChangeRecord:
    return PartitionChangeRecord(partition_id=index, topic_id=TOPIC_ID, isr=isr)


def acked(isr: list[int], partition_epoch: int, index: int = 0) -> PartitionAcked:
    """Leader 1 (or 2 for partition 1) told its ISR change to `isr` was committed at `partition_epoch`."""
    leader = 1 if index == 0 else 2
    return PartitionAcked(
        1, leader, broker_epoch(leader), 2, str(TOPIC_ID), index, isr, [], leader, 0, partition_epoch, isr
    )


def rules(result: QuorumResult) -> list[str]:
    return sorted(violation.rule for violation in result.violations)


def append_raw(data_dir: Path, offset: int, epoch: int, timestamp_ms: int, *records: Data) -> None:
    """A batch the controller's writer would refuse, appended to the node's last segment."""
    values = [encode_metadata_value(record, latest_version(type(record))) for record in records]
    segment = sorted((data_dir / PARTITION_DIR).glob("*.log"))[-1]
    with open(segment, "ab") as stream:
        stream.write(metadata_batch(offset, epoch, timestamp_ms, values))


# ---------------------------------------------------------------------- a clean quorum
def lagging_and_divergent(tmp_path: Path) -> tuple[Quorum, int, int]:
    """Five nodes. Node 5 led epoch 1, wrote two batches no one else took, and was deposed; node 1 leads
    epoch 2 with nodes 2-4 voting. Nodes 1-3 hold the committed log; node 4 lags (it took epoch 2's
    LeaderChange only); node 1, the leader, has one more batch than the majority. Returns the quorum,
    the committed end offset and the offset of the leader's uncommitted batch."""
    quorum = Quorum(tmp_path, nodes=(1, 2, 3, 4, 5))
    quorum.cluster(leader=5)
    quorum.append(shrink((1, 2)), on=[5])  # node 5's uncommitted tail
    quorum.append(shrink((1,)), on=[5])
    quorum.elect(2, 1, [1, 2, 3, 4])
    quorum.append(shrink((1, 2)), on=[1, 2, 3])  # partition epoch 1: committed
    end = quorum.append(shrink((2, 3), index=1), on=[1, 2, 3]) + 1
    tail = quorum.append(shrink((1,)), on=[1])  # partition epoch 2: the leader's alone
    return quorum, end, tail


def test_a_lagging_node_and_a_divergent_uncommitted_tail_are_fine(tmp_path: Path) -> None:
    quorum, end, _ = lagging_and_divergent(tmp_path)
    result = quorum.check([acked([1, 2], 1), acked([2, 3], 1, index=1)])
    assert result.ok, [v.line() for v in result.violations] + result.problems
    assert result.committed.end_offset == end and result.committed.majority == 3
    assert [result.nodes[index].label for index in result.committed.holders] == ["node 1", "node 2", "node 3"]
    node4, node5 = result.nodes[3], result.nodes[4]
    assert not node4.identical and node4.diverges_at is None and node4.end_offset < end
    assert node5.diverges_at == node4.end_offset - 1 and not node5.holds_end  # where epoch 2 began
    assert any("node 5 leaves the committed log" in note for note in result.notes)
    assert any("node 4 lags" in note for note in result.notes)
    assert result.check.counts["journal_partition_acked"] == 2
    assert result.check.end_offset == end  # the single-log rules stopped at the committed end


def test_an_answer_before_the_majority_committed_is_lost(tmp_path: Path) -> None:
    quorum, _, tail = lagging_and_divergent(tmp_path)
    result = quorum.check([acked([1], 2)])  # the leader answered its own uncommitted batch
    assert rules(result) == ["ack-lost"]
    assert result.nodes[0].end_offset == tail + 1


def test_the_cli_reports_each_node_and_the_quorum_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    quorum, end, _ = lagging_and_divergent(tmp_path)
    dirs = [str(path) for path in quorum.close()]
    report = tmp_path / "report.json"
    assert main([*dirs, "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert (
        f"quorum of 5 nodes (majority 3): the committed log is offsets 0..{end}, held by node 1, node 2, node 3" in out
    )
    assert "node 5 (" in out and "leaves the committed log" in out and out.rstrip().endswith("OK: no violations")
    data = json.loads(report.read_text())
    assert data["quorum"] is True and data["ok"] is True and data["committed"]["end_offset"] == end
    assert [node["node_id"] for node in data["nodes"]] == [1, 2, 3, 4, 5]
    assert data["nodes"][3]["holds_committed_log"] is False and data["nodes"][0]["quorum_state"]["leader_id"] == 1
    assert data["quorum_violation_counts"] == {} and data["committed_check"]["end_offset"] == end
    assert main([dirs[0]]) == 0 and "quorum" not in capsys.readouterr().out  # one dir: the single-log check


# ---------------------------------------------------------------------- each rule broken once
def test_a_divergent_committed_prefix_breaks_log_matching(tmp_path: Path) -> None:
    quorum = Quorum(tmp_path)
    quorum.cluster()
    stamp = quorum.timestamp_ms + 10
    changed = quorum.append(shrink((1, 2)), on=[1, 3], timestamp_ms=stamp)
    quorum.append(shrink((1, 3)), on=[2], timestamp_ms=stamp)  # the same offset and epoch, another batch
    quorum.append(shrink((2, 3), index=1), on=[1, 2, 3])
    result = quorum.check()
    assert rules(result) == ["quorum-log-matching", "quorum-log-matching"]  # nodes 1 and 3 each against 2
    first = result.quorum.kept[0]
    assert first.offset == changed and "holds a different batch there" in first.message
    assert result.nodes[1].holds_end and not result.nodes[1].identical


def test_a_snapshot_beyond_the_committed_log_breaks_log_matching(tmp_path: Path) -> None:
    quorum = Quorum(tmp_path)
    quorum.cluster()
    end = quorum.append(shrink((1, 2)), on=[1]) + 1  # not on a majority
    quorum.logs[1].write_snapshot(end, 1, [], quorum.timestamp_ms)
    result = quorum.check()
    assert rules(result) == ["quorum-log-matching"]
    assert "beyond the committed log's end" in result.violations[0].message


def test_two_leaders_in_one_epoch(tmp_path: Path) -> None:
    quorum = Quorum(tmp_path)
    quorum.cluster()
    quorum.elect(2, 1, [1, 2])
    quorum.append(shrink((1, 2)), on=[3])  # node 3 goes on in epoch 1, then ...
    quorum.elect(2, 3, [3])  # ... believes it won epoch 2 too
    result = quorum.check()
    assert rules(result) == ["quorum-one-leader"]  # at other offsets: Log Matching holds
    message = result.violations[0].message
    assert "epoch 2 has 2 leaders" in message and "1 (node 1: LeaderChange" in message and "3 (node 3" in message


def test_a_shrinking_epoch_along_one_log(tmp_path: Path) -> None:
    quorum = Quorum(tmp_path)
    quorum.cluster()
    quorum.elect(2, 1, [1, 2, 3])
    offset = quorum.logs[3].next_offset
    dirs = quorum.close()
    append_raw(dirs[2], offset, 1, quorum.timestamp_ms + 10, shrink((1, 2)))  # node 3 alone: uncommitted
    result = check_quorum(dirs)
    assert rules(result) == ["quorum-epoch-order"]
    assert result.violations[0].offset == offset and "epoch 1 after epoch 2" in result.violations[0].message


def test_a_shrinking_epoch_on_a_majority_is_a_deposed_write_committed(tmp_path: Path) -> None:
    quorum = Quorum(tmp_path)
    quorum.cluster()
    quorum.elect(2, 1, [1, 2, 3])
    offset = quorum.logs[1].next_offset
    dirs = quorum.close()
    for path in dirs[:2]:
        append_raw(path, offset, 1, quorum.timestamp_ms + 10, shrink((1, 2)))
    result = check_quorum(dirs)
    assert rules(result) == ["controller-epoch", "quorum-deposed-write", "quorum-epoch-order", "quorum-epoch-order"]


def test_an_acknowledged_change_missing_on_a_node_holding_the_committed_end(tmp_path: Path) -> None:
    quorum = Quorum(tmp_path)
    quorum.cluster()
    stamp = quorum.timestamp_ms + 10
    quorum.append(shrink((1, 2)), on=[1, 3], timestamp_ms=stamp)  # acknowledged: on nodes 1 and 3
    quorum.append(shrink((1, 2, 3)), on=[2], timestamp_ms=stamp)  # node 2 holds another batch there
    quorum.append(shrink((2, 3), index=1), on=[1, 2, 3])  # ... and then the committed log's last batch
    result = quorum.check([acked([1, 2], 1)])
    assert rules(result) == ["quorum-acked-on-node", "quorum-log-matching", "quorum-log-matching"]
    missing = next(v for v in result.violations if v.rule == "quorum-acked-on-node")
    assert "node 2 holds the final committed offset" in missing.message and "ack-lost" in missing.message
    assert missing.journal is not None and "partition_epoch=1" in missing.journal


def test_a_deposed_leaders_batch_committed(tmp_path: Path) -> None:
    quorum = Quorum(tmp_path)
    quorum.cluster(leader=3)
    elected = quorum.timestamp_ms + 10
    late = quorum.append(shrink((1, 2)), on=[1, 2], timestamp_ms=elected + 50)  # node 3's, written after ...
    quorum.elect(2, 1, [1, 2], timestamp_ms=elected)  # ... node 1 won epoch 2, and committed below it
    quorum.append(shrink((2, 3), index=1), on=[1, 2], timestamp_ms=elected + 60)
    result = quorum.check()
    assert rules(result) == ["quorum-deposed-write"]
    assert result.violations[0].offset == late and "stamped" in result.violations[0].message


def test_a_broker_acting_on_an_older_controller_epoch(tmp_path: Path) -> None:
    quorum = Quorum(tmp_path)
    quorum.cluster()
    quorum.elect(2, 1, [1, 2, 3])
    quorum.append(register(3, generation=1, epoch=500), on=[1, 2, 3])  # broker 3's next incarnation
    topic = str(TOPIC_ID)

    def observed(broker: int, index: int, controller_epoch: int) -> StateObserved:
        replicas = [1, 2, 3] if index == 0 else [2, 3, 4]
        return StateObserved(1, broker, controller_epoch, topic, index, replicas[0], 0, 0, replicas, replicas)

    def seen(broker: int, epoch: int, controller_epoch: int, previous: int, api: str = "LeaderAndIsr") -> Entry:
        return ControllerEpochSeen(1, broker, epoch, api, controller_epoch, previous)

    journal: list[Entry] = [
        seen(2, broker_epoch(2), 2, 0),
        observed(2, 0, 2),
        observed(2, 1, 1),  # broker 2 had seen epoch 2: acting on epoch 1 is stale
        seen(3, broker_epoch(3), 2, 0, "StopReplica"),
        seen(3, 500, 1, 0),  # a new incarnation has seen nothing yet: epoch 1 is its first
        observed(3, 1, 1),
        seen(4, broker_epoch(4), 2, 0),
        seen(4, broker_epoch(4), 1, 2, "StopReplica"),  # broker 4's listener took an older epoch as newer
        Registered(2, 1, str(incarnation(1)), broker_epoch(1)),
        observed(1, 0, 2),
        observed(1, 0, 1),  # the same incarnation as registered: stale
    ]
    result = quorum.check(journal)
    assert rules(result) == ["stale-controller-epoch"] * 3
    assert [v.broker for v in result.violations] == [2, 4, 1]
    assert "acted on a LeaderAndIsr of controller epoch 1 after one of epoch 2" in result.violations[0].message
    assert "acted on a StopReplica" in result.violations[1].message
    assert result.counts["journal_controller_epochs_judged"] == 10


# ---------------------------------------------------------------------- what the fleet saw of its own quorum
MS = 1_000_000  # journal times are nanoseconds
STARTED = QuorumStarted(0, [1, 2, 3], 500, 1000)


def claims(at_ms: int, *leaders: tuple[int, int]) -> QuorumLeadersSeen:
    return QuorumLeadersSeen(at_ms * MS, [[node, epoch] for node, epoch in leaders])


@pytest.mark.parametrize(
    "seen, deposed, claimed",
    [
        # node 1 cut off: node 2 leads epoch 2 from 5 s; node 1 resigns 0.8 s later
        ([claims(0, (1, 1)), claims(5000, (1, 1), (2, 2)), claims(5800, (2, 2))], False, 2),
        # ... or goes on saying it leads epoch 1 for 2.4 s, past check-quorum (1.5 s) and the slack
        ([claims(0, (1, 1)), claims(5000, (1, 1), (2, 2)), claims(7400, (2, 2))], True, 2),
        # ... until the run ends
        ([claims(0, (1, 1)), claims(5000, (1, 1), (2, 2))], True, 2),
        # node 1 paused (not asked) while node 2 was elected, says it leads for 0.2 s once woken
        ([claims(0, (1, 1)), claims(500, (2, 2)), claims(9000, (1, 1), (2, 2)), claims(9200, (2, 2))], False, 3),
    ],
)
def test_a_deposed_leader_that_goes_on_leading(tmp_path: Path, seen: list[Entry], deposed: bool, claimed: int) -> None:
    quorum = Quorum(tmp_path)
    quorum.cluster()
    result = quorum.check([STARTED, *seen, RunEnded(9500 * MS, True)])
    assert rules(result) == (["quorum-deposed-leader"] if deposed else [])
    if deposed:
        assert "node 1 said it led epoch 1 for " in result.violations[0].message
    assert result.counts["journal_quorum_claims_judged"] == claimed  # each node's claim, from its start to its end


def test_a_pre_vote_granted_to_a_stale_log(tmp_path: Path) -> None:
    quorum = Quorum(tmp_path)
    quorum.cluster()
    journal: list[Entry] = [
        STARTED,
        VoteProbed(1, 2, 1, 1, 0, 0, 7, 0, False),  # refused: right
        VoteProbed(2, 3, 1, 1, 0, 0, 0, 0, True),  # granted, but node 3 was not known to hold anything
        VoteProbed(3, 2, 1, 2, 0, 0, 7, 0, True),  # node 2 held 7 committed offsets: wrong
    ]
    result = quorum.check(journal)
    assert rules(result) == ["quorum-stale-vote"]
    assert "node 2 granted a pre-vote in epoch 2 to voter 1" in result.violations[0].message
    assert result.counts["journal_vote_probes_judged"] == 3


@pytest.mark.parametrize(
    "faults, end_ms, kept",
    [
        ([ControllerFaulted(1000 * MS, 5, "heal", 0, 1, 2)], 5000, True),  # 4 s whole, 3 fetch timeouts: judged
        ([ControllerFaulted(1000 * MS, 5, "heal", 0, 1, 2)], 3500, False),  # 2.5 s: not yet
        ([ControllerFaulted(1000 * MS, 5, "restart", 0, 1, 2)], 8000, False),  # a restart's start-up counted
        ([ControllerFaulted(1000 * MS, 5, "restart", 0, 1, 2)], 9500, True),
        ([ControllerFaulted(1000 * MS, 4, "kill", 900, 1, 2)], 9500, False),  # a node left down: never whole
    ],
)
def test_a_divergent_tail_kept_by_a_whole_quorum(tmp_path: Path, faults: list[Entry], end_ms: int, kept: bool) -> None:
    quorum, _, _ = lagging_and_divergent(tmp_path)  # node 5 holds a divergent tail
    result = quorum.check([STARTED, *faults, RunEnded(end_ms * MS, True)])
    assert rules(result) == (["quorum-divergent-tail"] if kept else [])
    if kept:
        assert "node 5 leaves the committed log" in result.violations[0].message


def test_a_controller_sending_under_another_leaders_epoch(tmp_path: Path) -> None:
    quorum = Quorum(tmp_path)
    quorum.cluster(leader=1)
    changed = quorum.elect(2, 2, [1, 2, 3])
    journal: list[Entry] = [
        ControlSenderSeen(1, 1, "LeaderAndIsr", 1, 1, 0),  # node 1 under its epoch
        ControlSenderSeen(2, 1, "LeaderAndIsr", 2, 2, 0),  # node 2 under its epoch
        ControlSenderSeen(3, 3, "LeaderAndIsr", 2, 1, 0),  # node 2 under node 1's: the old controller epoch
        ControlSenderSeen(4, 3, "StopReplica", 3, 7, 0),  # an epoch the log does not have: not judged here
    ]
    result = quorum.check(journal)
    assert rules(result) == ["controller-epoch-leader"]
    violation = result.violations[0]
    assert violation.broker == 3 and violation.offset == 0  # where epoch 1's LeaderChange is
    assert "controller 2 sent broker 3 a LeaderAndIsr under controller epoch 1" in violation.message
    assert result.counts["journal_control_senders_judged"] == 3 and changed > 0


def test_every_quorum_rule_is_planted_above() -> None:
    assert QUORUM_RULES == [
        "quorum-log-matching",
        "quorum-one-leader",
        "quorum-epoch-order",
        "quorum-acked-on-node",
        "quorum-deposed-write",
        "quorum-deposed-leader",
        "quorum-stale-vote",
        "quorum-divergent-tail",
        "stale-controller-epoch",
    ]


def test_a_node_without_a_log_yet_is_an_empty_log(tmp_path: Path) -> None:
    quorum = Quorum(tmp_path, nodes=(1, 2))
    quorum.cluster()
    empty = tmp_path / "node-3"
    empty.mkdir()
    result = check_quorum([*quorum.close(), empty])
    assert result.ok and result.committed.holders == [0, 1]
    assert any("no metadata log yet" in note for note in result.notes)
