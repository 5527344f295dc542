"""A correct controller's history has no violation: the real controller core decides, its batches are
written to a real metadata log, and the checker (which never imports the controller) must agree.

The history covers what the rules are about: ISR shrinks and expansions (v2 and v3 with member
epochs), a session expiry fencing a leader, a bounce (new incarnation) and rejoin, controlled
shutdown through the API and through heartbeats (including a leader without successor), replicas
offline and online again, a topic deleted and re-created, a preferred election, an unclean
election, a controller restart and snapshots (compared with the replay, and used as the start of a
log whose old segments retention deleted).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from broker_sim.check import check
from broker_sim.journal import Entry, PartitionAcked, Registered, RunStarted, TopicCreated
from controller.ops.changes import eligible
from protocol.messages.alter_replica_state import OFFLINE, ONLINE
from protocol.messages.delete_topics import DeleteTopicsRequest
from protocol.messages.elect_leaders import PREFERRED, UNCLEAN, ElectLeadersRequest, ElectLeadersRequestTopicPartitions

from .logs import ControllerLog, write_churn_log

NOW_NS = 1_700_000_000_000_000_000


class Scenario:
    """The steps of a correct history, with the journal a fleet would have written for them."""

    def __init__(self, data_dir: Path, segment_bytes: int = 1 << 30) -> None:
        self.controller = ControllerLog(data_dir, segment_bytes=segment_bytes)
        self.h = self.controller.harness
        self.journal: list[Entry] = []
        self.snapshots: list[int] = []

    def register(self, broker_id: int, generation: int = 0) -> None:
        epoch = self.h.register(broker_id, generation)
        self.journal.append(
            Registered(NOW_NS, broker_id, str(self.h.registration(broker_id, generation).incarnation_id), epoch)
        )

    def create(self, name: str, partitions: int, replication_factor: int) -> uuid.UUID:
        topic_id = self.h.create_topic(name, partitions, replication_factor)
        self.journal.append(TopicCreated(NOW_NS, name, str(topic_id), partitions, replication_factor))
        return topic_id

    def alter_isr(self, name: str, index: int, isr: list[int], version: int = 2, recovery: int = 0) -> None:
        part = self.h.partition(name, index)
        epochs = {b: self.h.epoch(b) for b in isr} if version >= 3 else None
        response, _ = self.h.alter_isr(name, index, isr, version=version, member_epochs=epochs, recovery=recovery)
        answer = response.topics[0].partitions[0]
        assert answer.error_code == 0, answer
        self.journal.append(
            PartitionAcked(
                NOW_NS,
                part.leader,
                self.h.epoch(part.leader),
                version,
                str(self.h.topic_id(name)),
                index,
                isr,
                [epochs[b] for b in isr] if epochs else [],
                answer.leader_id,
                answer.leader_epoch,
                answer.partition_epoch,
                list(answer.isr),
            )
        )

    def heartbeat_all(self, *broker_ids: int) -> None:
        for broker_id in broker_ids:
            self.h.heartbeat(broker_id)

    def three_brokers_and_a_topic(self, name: str = "a") -> None:
        """Brokers 1-3 registered and unfenced, topic `name` of 2 partitions on all three."""
        for broker_id in (1, 2, 3):
            self.register(broker_id)
        self.heartbeat_all(1, 2, 3)
        self.create(name, 2, 3)

    def fleet_journal(self) -> list[Entry]:
        """The journal as a fleet run's: a RunStarted first (what the fleet-run-only rules want)."""
        return [RunStarted(NOW_NS - 10**12, 1, "chaos", 3, 1, 1000, 3000, 10000), *self.journal]

    def run(self) -> None:
        h = self.h
        for broker_id in (1, 2, 3, 4, 5):
            self.register(broker_id)
        self.heartbeat_all(1, 2, 3, 4, 5)
        self.create("a", 6, 3)
        self.create("b", 3, 2)
        self.create("solo", 2, 1)
        for index in range(6):  # shrink every ISR of `a` to its leader and one follower, then expand back
            replicas = list(h.partition("a", index).replicas)
            self.alter_isr("a", index, replicas[:2], version=2 + index % 2)
            self.alter_isr("a", index, replicas, version=2 + index % 2)
        self.expire(3)  # a session expiry fences broker 3: its leaderships move
        self.register(3, generation=1)  # a bounce: new incarnation, fenced until caught up
        self.heartbeat_all(3)
        for index in range(6):  # the leaders take it back
            part = h.partition("a", index)
            if 3 in part.replicas and 3 not in part.isr:
                self.alter_isr("a", index, [*part.isr, 3], version=3)
        self.controller.flush()
        self.snapshots.append(self.controller.snapshot())
        self.offline_and_online()
        self.shutdowns()
        self.controller.restart()
        self.heartbeat_all(2, 3, 4, 5)
        self.topics_and_elections()
        self.snapshots.append(self.controller.snapshot())
        for index in range(3):
            part = h.partition("b", index)
            self.alter_isr("b", index, list(part.isr[:1]))
        self.controller.close()

    def expire(self, broker_id: int) -> None:
        others = [
            b
            for b in self.h.core.state.cluster.brokers
            if b != broker_id and not self.h.core.state.cluster.brokers[b].fenced
        ]
        self.h.advance(5_000, expire=False)
        self.heartbeat_all(*others)
        assert self.h.advance(5_000)  # only `broker_id` missed its session

    def offline_and_online(self) -> None:
        h = self.h
        led = [i for i in range(6) if h.partition("a", i).leader == 2]
        assert led
        response, _ = h.alter_replica_state(2, "a", led, OFFLINE)
        assert all(p.error_code == 0 for p in response.topics[0].partitions)
        response, _ = h.alter_replica_state(2, "a", led, ONLINE)
        for index in led:  # back in the ISR through its leader
            part = h.partition("a", index)
            if 2 not in part.isr:
                self.alter_isr("a", index, [*part.isr, 2])

    def shutdowns(self) -> None:
        h = self.h
        response, _ = h.controlled_shutdown(1)  # through the API: hands over what it can
        for _ in range(3):
            if not response.remaining_partitions:
                break
            response, _ = h.controlled_shutdown(1)
        assert h.heartbeat(1, want_shut_down=True).should_shut_down  # done: fenced
        self.heartbeat_all(2, 3, 4, 5)
        # broker 5 leaves through heartbeats only, while it leads partitions of `solo`, if any
        response = h.heartbeat(5, want_shut_down=True)
        for _ in range(3):
            if response.should_shut_down:
                break
            response = h.heartbeat(5, want_shut_down=True)
        if not response.should_shut_down:  # a leadership without successor: it stays until its session ends
            self.expire(5)
        self.register(1, generation=1)
        self.register(5, generation=1)
        self.heartbeat_all(1, 2, 3, 4, 5)

    def topics_and_elections(self) -> None:
        h = self.h
        response, _ = h.send(DeleteTopicsRequest(topic_names=("b",)), 5)
        assert response.responses[0].error_code == 0
        self.create("b", 3, 3)
        moved = 0
        for index in range(6):  # full ISRs, then preferred elections move leadership to the first replica
            part = h.partition("a", index)
            if part.leader == -1:
                continue
            active = [r for r in part.replicas if eligible(h.core.state, part, r)]
            if set(active) != set(part.isr):
                self.alter_isr("a", index, [*part.isr, *(r for r in active if r not in part.isr)])
            if h.partition("a", index).leader != part.replicas[0] and part.replicas[0] in active:
                moved += self.elect(PREFERRED, "a", index)
        assert moved
        self.unclean_election()

    def elect(self, election: int, name: str, index: int) -> int:
        request = ElectLeadersRequest(
            election_type=election,
            topic_partitions=(ElectLeadersRequestTopicPartitions(topic=name, partitions=(index,)),),
        )
        response, records = self.h.send(request, 1)
        assert response.replica_election_results[0].partition_result[0].error_code == 0, response
        return len(records)

    def unclean_election(self) -> None:
        """`b`-0 shrunk to its leader, which a session expiry fences: leaderless; an unclean election
        gives it to a replica outside the ISR (RECOVERING), which recovers, then expands the ISR."""
        h = self.h
        part = h.partition("b", 0)
        self.alter_isr("b", 0, [part.leader])
        self.expire(part.leader)
        assert h.partition("b", 0).leader == -1
        self.elect(UNCLEAN, "b", 0)
        chosen = h.partition("b", 0)
        assert chosen.leader_recovery_state == 1 and chosen.isr == (chosen.leader,)
        self.alter_isr("b", 0, [chosen.leader], version=1, recovery=0)
        follower = next(r for r in chosen.replicas if r != chosen.leader and eligible(h.core.state, chosen, r))
        self.alter_isr("b", 0, [chosen.leader, follower])
        h.heartbeat(part.leader)  # the fenced leader comes back (same incarnation): unfenced, a follower


def test_a_correct_history_has_no_violation(tmp_path: Path) -> None:
    scenario = Scenario(tmp_path / "data")
    scenario.run()
    result = check(tmp_path / "data", scenario.journal)
    assert result.violations == []
    assert result.problems == []
    assert result.ok
    assert result.counts["records"] > 80
    assert result.counts["snapshots_compared"] == 2
    assert result.counts["journal_partition_acked"] == sum(isinstance(e, PartitionAcked) for e in scenario.journal)
    assert result.counts["journal_registered"] == sum(isinstance(e, Registered) for e in scenario.journal)
    assert result.counts["journal_topic_created"] == 4
    assert result.unverifiable == {}


@pytest.mark.parametrize("keep_journal", [False, True])
def test_retention_starts_from_the_snapshot_covering_the_deleted_segments(tmp_path: Path, keep_journal: bool) -> None:
    scenario = Scenario(tmp_path / "data", segment_bytes=2048)
    scenario.run()
    log = ControllerLog.reopen(tmp_path / "data", segment_bytes=2048)
    log.delete_segments_below(scenario.snapshots[0])
    log.close()
    result = check(tmp_path / "data", scenario.journal if keep_journal else None)
    assert result.ok, [v.line() for v in result.violations] + result.problems
    assert 0 < result.start_offset <= scenario.snapshots[0]
    assert result.counts["snapshots_compared"] >= 1
    if keep_journal:  # acknowledgements below the snapshot cannot be judged, and are not violations
        assert sum(result.unverifiable.values()) > 0


def test_a_large_correct_churn_log_has_no_violation(tmp_path: Path) -> None:
    records = write_churn_log(tmp_path / "data", brokers=30, topics=5, partitions=20, changes=5_000)
    result = check(tmp_path / "data")
    assert result.violations == [] and result.ok
    assert result.counts["records"] == records
