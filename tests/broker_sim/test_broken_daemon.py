"""Each planted bug of broken_daemon.py is real: a short script shows it on the wire or in /state.

The same script runs against the real daemon (the correct answer) and against the broken one (the
bug's answer), so a patch that silently stopped applying (a renamed function) fails here, not as
a mysterious "the fleet found nothing" elsewhere.
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestBrokerState,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
)
from protocol.messages.alter_replica_state import (
    OFFLINE,
    AlterReplicaStateRequest,
    AlterReplicaStateRequestTopicReplicas,
)
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationRequestListener
from protocol.messages.controlled_shutdown import ControlledShutdownRequest
from protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableReplicaAssignment,
    CreateTopicsRequestCreatableTopic,
)
from protocol.messages.delete_topics import DeleteTopicsRequest
from protocol.messages.describe_cluster import DescribeClusterRequest
from tests.e2e.daemon_process import DaemonProcess, free_port
from tests.e2e.fencer_client import FencerClient
from tests.e2e.listener_thread import ListenerThread

from .broken_daemon import BUGS

TOPIC = "t"
REPLICAS = (0, 1, 2)


class Cluster:
    """Three registered, unfenced brokers (no live listeners) and topic `t`: one partition on 0, 1, 2."""

    def __init__(self, daemon: DaemonProcess, metrics_port: int) -> None:
        self.client = FencerClient(daemon.port)
        self.metrics_port = metrics_port
        self.cluster_id = self.client.request(DescribeClusterRequest(), 1).cluster_id
        self.epochs: dict[int, int] = {}
        for broker in REPLICAS:
            self.register(broker)
            self.heartbeat(broker)
        assignment = CreateTopicsRequestCreatableReplicaAssignment(partition_index=0, broker_ids=REPLICAS)
        topic = CreateTopicsRequestCreatableTopic(
            name=TOPIC, num_partitions=-1, replication_factor=-1, assignments=(assignment,)
        )
        created = self.client.request(CreateTopicsRequest(topics=(topic,)), 7).topics[0]
        assert created.error_code == 0
        self.topic_id: uuid.UUID = created.topic_id

    def register(self, broker: int, port: int = 1) -> int:
        listener = BrokerRegistrationRequestListener(name="PLAINTEXT", host="127.0.0.1", port=port, security_protocol=0)
        request = BrokerRegistrationRequest(
            broker_id=broker, cluster_id=self.cluster_id, incarnation_id=uuid.uuid4(), listeners=(listener,)
        )
        response = self.client.request(request, 3)
        assert response.error_code == 0
        self.epochs[broker] = response.broker_epoch
        return int(response.broker_epoch)

    def heartbeat(self, broker: int, *, want_fence: bool = False) -> Any:
        request = BrokerHeartbeatRequest(
            broker_id=broker, broker_epoch=self.epochs[broker], current_metadata_offset=1 << 40, want_fence=want_fence
        )
        return self.client.request(request, 1)

    def alter(self, broker: int, leader_epoch: int, isr: tuple[int, ...], partition_epoch: int, **options: int) -> Any:
        """AlterPartition v3 from `broker`; the partition's answer (or the whole response if it failed)."""
        members = tuple(AlterPartitionRequestBrokerState(broker_id=b, broker_epoch=self.epochs[b]) for b in isr)
        data = AlterPartitionRequestPartitionData(
            partition_index=0, leader_epoch=leader_epoch, new_isr_with_epochs=members, partition_epoch=partition_epoch
        )
        request = AlterPartitionRequest(
            broker_id=broker,
            broker_epoch=options.get("broker_epoch", self.epochs[broker]),
            topics=(AlterPartitionRequestTopicData(topic_id=self.topic_id, partitions=(data,)),),
        )
        response = self.client.request(request, 3)
        return response.topics[0].partitions[0] if response.error_code == 0 else response

    def partition(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/state", timeout=30) as answer:
            state = json.loads(answer.read())
        (topic,) = (topic for topic in state["topics"] if topic["name"] == TOPIC)
        return dict(topic["partitions"][0])


def wait_for_partition_epoch(live: ListenerThread, partition_epoch: int, seconds: float = 5.0) -> bool:
    """Has the listener's view of the partition reached `partition_epoch` within `seconds`?"""

    def epoch() -> int:
        view = live.listener.partitions.get((TOPIC, 0))
        return -1 if view is None else view.partition_epoch

    deadline = time.monotonic() + seconds
    while epoch() != partition_epoch and time.monotonic() < deadline:
        time.sleep(0.02)
    return epoch() == partition_epoch


def admit_ineligible(cluster: Cluster) -> object:
    cluster.heartbeat(2, want_fence=True)  # out of the ISR: (0, 1)
    return cluster.alter(0, 0, (0, 1, 2), 1).error_code  # 2 is fenced


def stale_shutdown_epoch(cluster: Cluster) -> object:
    old = cluster.epochs[1]
    cluster.heartbeat(1, want_fence=True)
    cluster.register(1)  # a new incarnation
    return cluster.client.request(ControlledShutdownRequest(broker_id=1, broker_epoch=old), 3).error_code


def stale_partition_epoch(cluster: Cluster) -> object:
    assert cluster.alter(0, 0, (0, 1), 0).error_code == 0
    return cluster.alter(0, 0, (0,), 0).error_code  # built on partition epoch 0, now 1


def stale_leader_epoch(cluster: Cluster) -> object:
    cluster.heartbeat(0, want_fence=True)  # leader 1, leader epoch 1, ISR (1, 2)
    cluster.heartbeat(0)
    part = cluster.partition()
    assert cluster.alter(1, 1, (1, 2, 0), part["partition_epoch"]).error_code == 0
    cluster.heartbeat(1, want_fence=True)  # leader 0 again, leader epoch 2
    part = cluster.partition()
    assert (part["leader"], part["leader_epoch"]) == (0, 2)
    return cluster.alter(0, 0, (0, 2), part["partition_epoch"]).error_code  # its old leader epoch


def stale_broker_epoch(cluster: Cluster) -> object:
    return cluster.alter(0, 0, (0, 1), 0, broker_epoch=cluster.epochs[0] - 1).error_code


def no_leader_epoch_bump(cluster: Cluster) -> object:
    cluster.heartbeat(0, want_fence=True)
    part = cluster.partition()
    return (part["leader"], part["leader_epoch"])


def fenced_keeps_leadership(cluster: Cluster) -> object:
    cluster.heartbeat(0, want_fence=True)
    return cluster.partition()["leader"]


def successor_outside_isr(cluster: Cluster) -> object:
    assert cluster.alter(0, 0, (0, 2), 0).error_code == 0  # 1 leaves the ISR
    cluster.heartbeat(0, want_fence=True)
    part = cluster.partition()
    return (part["leader"], part["isr"])


def offline_stays_in_isr(cluster: Cluster) -> object:
    topic = AlterReplicaStateRequestTopicReplicas(topic_id=cluster.topic_id, partitions=(0,))
    request = AlterReplicaStateRequest(broker_id=1, broker_epoch=cluster.epochs[1], new_state=OFFLINE, topics=(topic,))
    assert cluster.client.request(request, 1).error_code == 0
    return cluster.partition()["isr"]


def stale_replica_state_epoch(cluster: Cluster) -> object:
    topic = AlterReplicaStateRequestTopicReplicas(topic_id=cluster.topic_id, partitions=(0,))
    request = AlterReplicaStateRequest(
        broker_id=1, broker_epoch=cluster.epochs[1] - 1, new_state=OFFLINE, topics=(topic,)
    )
    return cluster.client.request(request, 1).error_code


def shutdown_lets_go_leading(cluster: Cluster) -> object:
    request = ControlledShutdownRequest(broker_id=0, broker_epoch=cluster.epochs[0])
    remaining = cluster.client.request(request, 3).remaining_partitions
    return (len(remaining), cluster.partition()["leader"])  # answered done: does broker 0 still lead?


def forget_acknowledged(cluster: Cluster) -> object:
    assert cluster.alter(0, 0, (0, 1), 0).partition_epoch == 1  # acknowledged
    return cluster.partition()["partition_epoch"]


def no_session_expiry(cluster: Cluster) -> object:
    for _ in range(int(3 * SHORT_SESSION_MS / 500)):  # broker 0 falls silent, 1 and 2 keep heartbeating
        cluster.heartbeat(1)
        cluster.heartbeat(2)
        time.sleep(0.5)
    return cluster.partition()["leader"]


def unfence_not_caught_up(cluster: Cluster) -> object:
    cluster.heartbeat(1, want_fence=True)
    epoch = cluster.register(1)  # a new incarnation, fenced
    lagging = BrokerHeartbeatRequest(broker_id=1, broker_epoch=epoch, current_metadata_offset=epoch - 1)
    response = cluster.client.request(lagging, 1)
    return (response.is_caught_up, response.is_fenced)


def lai_leader_only(cluster: Cluster) -> object:
    live = ListenerThread(2)
    try:
        cluster.heartbeat(2, want_fence=True)  # leader 0, ISR (0, 1)
        live.epoch = cluster.register(2, port=live.port)  # a new incarnation with a live listener
        cluster.heartbeat(2)  # unfenced: a full LeaderAndIsr reaches it
        part = cluster.partition()
        assert wait_for_partition_epoch(live, part["partition_epoch"])
        assert cluster.alter(0, part["leader_epoch"], (0,), part["partition_epoch"]).error_code == 0
        # the ISR change, as a LeaderAndIsr to replica 2?
        return wait_for_partition_epoch(live, part["partition_epoch"] + 1)
    finally:
        live.stop()


def follower_alters_isr(cluster: Cluster) -> object:
    return cluster.alter(1, 0, (0, 1), 0).error_code  # follower 1, current epochs; leader 0 kept in


def isr_non_replica(cluster: Cluster) -> object:
    cluster.register(3)  # registered and unfenced, no replica of t-0
    cluster.heartbeat(3)
    return cluster.alter(0, 0, (0, 1, 2, 3), 0).error_code


def no_stop_replica_on_delete(cluster: Cluster) -> object:
    live = ListenerThread(2)
    try:
        cluster.heartbeat(2, want_fence=True)
        live.epoch = cluster.register(2, port=live.port)
        cluster.heartbeat(2)  # unfenced: the full LeaderAndIsr makes it a replica of t-0
        assert wait_for_partition_epoch(live, cluster.partition()["partition_epoch"])
        deleted = cluster.client.request(DeleteTopicsRequest(topic_names=(TOPIC,)), 4)
        assert deleted.responses[0].error_code == 0
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            view = live.listener.partitions.get((TOPIC, 0))
            if view is not None and view.deleted:
                return True
            time.sleep(0.02)
        return False
    finally:
        live.stop()


# bug -> (script, what the real daemon shows, what the broken one shows)
CASES: dict[str, tuple[Callable[[Cluster], object], object, object]] = {
    "admit-ineligible": (admit_ineligible, 107, 0),
    "stale-shutdown-epoch": (stale_shutdown_epoch, 77, 0),
    "stale-partition-epoch": (stale_partition_epoch, 95, 0),
    "stale-leader-epoch": (stale_leader_epoch, 74, 0),
    "stale-broker-epoch": (stale_broker_epoch, 77, 0),
    "no-leader-epoch-bump": (no_leader_epoch_bump, (1, 1), (1, 0)),
    "fenced-keeps-leadership": (fenced_keeps_leadership, 1, 0),
    "successor-outside-isr": (successor_outside_isr, (2, [2]), (1, [2])),
    "offline-stays-in-isr": (offline_stays_in_isr, [0, 2], [0, 1, 2]),
    "stale-replica-state-epoch": (stale_replica_state_epoch, 77, 0),
    "forget-acknowledged": (forget_acknowledged, 1, 0),
    "shutdown-lets-go-leading": (shutdown_lets_go_leading, (0, 1), (0, 0)),
    "no-session-expiry": (no_session_expiry, 1, 0),
    "unfence-not-caught-up": (unfence_not_caught_up, (False, True), (True, False)),
    "lai-leader-only": (lai_leader_only, True, False),
    "follower-alters-isr": (follower_alters_isr, 42, 0),
    "isr-non-replica": (isr_non_replica, 42, 0),
    "no-stop-replica-on-delete": (no_stop_replica_on_delete, True, False),
}
#: the session timeout of a case that waits for sessions to expire (the others never let one)
SHORT_SESSION_MS = 1_500
SESSION_MS = {"no-session-expiry": SHORT_SESSION_MS}


def test_every_bug_has_a_case() -> None:
    assert set(CASES) == set(BUGS)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[[str | None], Cluster]]:
    started: list[DaemonProcess] = []

    def start(bug: str | None, session_ms: int = 60_000) -> Cluster:
        metrics_port = free_port()
        options = ["--session-timeout-ms", str(session_ms), "--metrics-listen", f"127.0.0.1:{metrics_port}"]
        name = bug or "real"
        if bug is None:
            daemon = DaemonProcess(tmp_path / name, *options)
        else:
            daemon = DaemonProcess(tmp_path / name, "--bug", bug, *options, module="tests.broker_sim.broken_daemon")
        started.append(daemon.start())
        return Cluster(daemon, metrics_port)

    yield start
    for daemon in started:
        daemon.stop()


@pytest.mark.parametrize("bug", sorted(CASES))
def test_the_bug_shows_where_the_real_daemon_is_right(bug: str, start: Callable[..., Cluster]) -> None:
    script, right, wrong = CASES[bug]
    session_ms = SESSION_MS.get(bug, 60_000)
    assert script(start(None, session_ms)) == right
    assert script(start(bug, session_ms)) == wrong
