"""The daemon end to end: a real subprocess, a real TCP listener, a real fsync'd data dir, and kio
0.5.0 (an implementation independent of fencer's codec) as the client, for every inbound API and
version, and the rules of semantics.md that only show over time (session fencing, shutdown)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.log.properties import load_or_format
from protocol.messages.alter_replica_state import (
    OFFLINE,
    ONLINE,
    AlterReplicaStateRequest,
    AlterReplicaStateRequestTopicReplicas,
)

from . import kio_messages as m
from .daemon_process import DaemonProcess
from .fencer_client import FencerClient
from .kio_client import KioClient

INBOUND = {7: (0, 3), 18: (0, 4), 19: (2, 7), 20: (1, 6), 43: (0, 2), 56: (0, 3), 60: (0, 1), 62: (0, 4), 63: (0, 1)}
# the quorum's Raft RPCs, served by every node, a sole voter too (Vote v2: Kafka 4.0's pre-vote)
INBOUND |= {1: (13, 17), 52: (0, 2), 53: (0, 1), 54: (0, 1), 55: (0, 2), 59: (0, 1)}
# the ACL APIs (SECURITY_DISABLED without an authorizer: tests/e2e/test_acls.py)
INBOUND |= {29: (0, 3), 30: (0, 3), 31: (0, 3)}


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    process = DaemonProcess(tmp_path / "data", "--session-timeout-ms", "1500").start()
    yield process
    assert process.stop() == 0, process.stderr()


def cluster_id(daemon: DaemonProcess) -> str:
    with KioClient(daemon.port) as client:
        return str(client.request(m.describe_cluster(1)).cluster_id)


def start_broker(client: KioClient, cluster: str, broker_id: int, generation: int = 0) -> int:
    incarnation = uuid.UUID(int=(broker_id << 16) + generation + 1)
    response = client.request(m.broker_registration(3, broker_id, cluster, incarnation, 19000 + broker_id))
    assert response.error_code == 0, response
    heartbeat = client.request(m.broker_heartbeat(1, broker_id, response.broker_epoch))
    assert heartbeat.error_code == 0 and not heartbeat.is_fenced, heartbeat
    return int(response.broker_epoch)


def test_api_versions_every_version_lists_the_inbound_apis(daemon: DaemonProcess) -> None:
    with KioClient(daemon.port) as client:
        for version in range(5):
            response = client.request(m.api_versions(version))
            assert response.error_code == 0
            ranges = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}
            assert ranges == {**INBOUND, 1000: (0, 1)}


def test_describe_cluster_every_version(daemon: DaemonProcess) -> None:
    stored = load_or_format(daemon.data_dir, None, 1, fsync=False, messages=[]).cluster_id
    with KioClient(daemon.port) as client:
        for version in (0, 1):
            response = client.request(m.describe_cluster(version))
            assert response.error_code == 0
            assert response.cluster_id == stored
            assert response.controller_id == 1


def test_registration_and_heartbeat_every_version(daemon: DaemonProcess) -> None:
    cluster = cluster_id(daemon)
    with KioClient(daemon.port) as client:
        epochs = []
        for version in range(5):
            broker_id = 10 + version
            request = m.broker_registration(version, broker_id, cluster, uuid.uuid4(), 19000 + broker_id)
            response = client.request(request)
            assert response.error_code == 0
            epochs.append(int(response.broker_epoch))
        assert epochs == sorted(epochs) and len(set(epochs)) == 5
        for version in (0, 1):
            broker_id = 10 + version
            response = client.request(m.broker_heartbeat(version, broker_id, epochs[version]))
            assert response.error_code == 0 and not response.is_fenced and response.is_caught_up
            stale = client.request(m.broker_heartbeat(version, broker_id, epochs[version] - 1))
            assert stale.error_code == 77
        wrong_cluster = client.request(m.broker_registration(2, 20, "another-cluster", uuid.uuid4(), 1))
        assert wrong_cluster.error_code == 104


def test_topics_alter_partition_and_elections_every_version(daemon: DaemonProcess) -> None:
    cluster = cluster_id(daemon)
    with KioClient(daemon.port) as client:
        epochs = {b: start_broker(client, cluster, b) for b in (1, 2, 3)}
        for version in range(2, 8):
            response = client.request(m.create_topics(version, f"topic-v{version}", 2, 3))
            assert response.topics[0].error_code == 0, response
        duplicate = client.request(m.create_topics(7, "topic-v7", 1, 1))
        assert duplicate.topics[0].error_code == 36  # TOPIC_ALREADY_EXISTS
        topic_id = client.request(m.create_topics(7, "isr", 0, 0, assignments=[[1, 2, 3]])).topics[0].topic_id
        partition_epoch = 0
        for version in range(4):
            # the leader (broker 1) shrinks the ISR to itself and broker 2, then expands it back
            for isr in ((1, 2), (1, 2, 3)):
                request = m.alter_partition(version, 1, epochs[1], "isr", topic_id, 0, 0, isr, partition_epoch)
                result = client.request(request).topics[0].partitions[0]
                assert result.error_code == 0, (version, result)
                assert tuple(result.isr) == isr and result.partition_epoch == partition_epoch + 1
                assert result.leader_id == 1 and result.leader_epoch == 0
                partition_epoch += 1
            stale = m.alter_partition(version, 1, epochs[1], "isr", topic_id, 0, 0, (1, 2), 0)
            assert client.request(stale).topics[0].partitions[0].error_code == 95  # INVALID_UPDATE_VERSION
            follower = m.alter_partition(version, 2, epochs[2], "isr", topic_id, 0, 0, (2,), partition_epoch)
            assert client.request(follower).topics[0].partitions[0].error_code == 42  # not the leader
        for version in range(3):
            result = client.request(m.elect_leaders(version, "isr", (0,))).replica_election_results[0]
            assert result.partition_result[0].error_code == 84  # ELECTION_NOT_NEEDED: broker 1 is preferred
        for version in range(1, 7):
            response = client.request(m.delete_topics(version, f"topic-v{version + 1}"))
            assert response.responses[0].error_code == 0, (version, response)
        gone = client.request(m.delete_topics(4, "topic-v2"))
        assert gone.responses[0].error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION


def test_session_timeout_fences_a_silent_leader_and_its_stale_requests(daemon: DaemonProcess) -> None:
    cluster = cluster_id(daemon)
    with KioClient(daemon.port) as client:
        old_epoch = start_broker(client, cluster, 1)
        epoch_2 = start_broker(client, cluster, 2)
        topic_id = client.request(m.create_topics(7, "t", 0, 0, assignments=[[1, 2]])).topics[0].topic_id
        # broker 1 (the leader) goes silent; broker 2 keeps heartbeating past the 1.5 s session timeout
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            assert not client.request(m.broker_heartbeat(1, 2, epoch_2)).is_fenced
            time.sleep(0.2)
        # fencing moved leadership to broker 2 (leader epoch 1) and bumped the partition epoch
        takeover = m.alter_partition(2, 2, epoch_2, "t", topic_id, 0, 1, (2,), 1)
        assert client.request(takeover).topics[0].partitions[0].error_code == 0
        # the deposed leader's request carries leader epoch 0: fenced
        deposed = m.alter_partition(2, 1, old_epoch, "t", topic_id, 0, 0, (1, 2), 0)
        assert client.request(deposed).topics[0].partitions[0].error_code == 74  # FENCED_LEADER_EPOCH
        # broker 1 bounces: a new incarnation, a new epoch; its old incarnation's requests are stale
        new_epoch = start_broker(client, cluster, 1, generation=1)
        assert new_epoch > old_epoch
        assert client.request(m.controlled_shutdown(3, 1, old_epoch)).error_code == 77
        stale_heartbeat = client.request(m.broker_heartbeat(1, 1, old_epoch))
        assert stale_heartbeat.error_code == 77


def test_controlled_shutdown_every_version(daemon: DaemonProcess) -> None:
    cluster = cluster_id(daemon)
    with KioClient(daemon.port) as client:
        epochs = {b: start_broker(client, cluster, b) for b in (1, 2, 3, 4, 5)}
        assert client.request(m.create_topics(7, "cs", 6, 3)).topics[0].error_code == 0
        assert client.request(m.controlled_shutdown(0, 9, -1)).error_code == 8  # unknown broker
        for version, broker in zip(range(4), (1, 2, 3, 4), strict=True):
            response = client.request(m.controlled_shutdown(version, broker, epochs[broker]))
            assert response.error_code == 0, (version, response)
            if version == 0:  # with four others active, every leadership of broker 1 can move
                assert list(response.remaining_partitions) == []
        stale = client.request(m.controlled_shutdown(2, 5, epochs[5] - 1))
        assert stale.error_code == 77  # KIP-380


def test_alter_replica_state_both_versions(daemon: DaemonProcess) -> None:
    cluster = cluster_id(daemon)
    with KioClient(daemon.port) as client:
        epochs = {b: start_broker(client, cluster, b) for b in (1, 2, 3)}
        topic_id = client.request(m.create_topics(7, "disks", 1, 3)).topics[0].topic_id
    with FencerClient(daemon.port) as client:
        for version, state in ((0, OFFLINE), (1, ONLINE)):
            topic = AlterReplicaStateRequestTopicReplicas(
                name="disks" if version == 0 else "",
                topic_id=topic_id if version == 1 else uuid.UUID(int=0),
                partitions=(0,),
            )
            request = AlterReplicaStateRequest(broker_id=2, broker_epoch=epochs[2], new_state=state, topics=(topic,))
            response = client.request(request, version)
            assert response.error_code == 0 and response.topics[0].partitions[0].error_code == 0
        bad = AlterReplicaStateRequest(broker_id=2, broker_epoch=epochs[2], new_state=7, topics=())
        assert client.request(bad, 1).error_code == 1000
