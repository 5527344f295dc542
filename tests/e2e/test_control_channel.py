"""The daemon pushes LeaderAndIsr and StopReplica to brokers' listeners, with the right epochs.

Each broker is a real `BrokerControlListener` (the broker side, as the fleet runs it) on its own
port, in a background thread; the daemon connects to the address each broker registered.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from protocol.messages.leader_and_isr import LeaderAndIsrRequest, LeaderAndIsrResponse
from protocol.messages.stop_replica import StopReplicaRequest, StopReplicaResponse

from . import kio_messages as m
from .daemon_process import DaemonProcess
from .kio_client import KioClient
from .listener_thread import ListenerThread


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


@pytest.fixture
def brokers() -> Iterator[dict[int, ListenerThread]]:
    threads = {b: ListenerThread(b) for b in (1, 2, 3)}
    yield threads
    for thread in threads.values():
        thread.stop()


def test_leader_and_isr_and_stop_replica_reach_the_brokers_with_their_epochs(
    tmp_path: Path, brokers: dict[int, ListenerThread]
) -> None:
    daemon = DaemonProcess(tmp_path / "data").start()
    try:
        with KioClient(daemon.port) as client:
            cluster = client.request(m.describe_cluster(1)).cluster_id
            for broker_id, thread in brokers.items():
                incarnation = uuid.UUID(int=broker_id)
                response = client.request(m.broker_registration(3, broker_id, cluster, incarnation, thread.port))
                thread.epoch = int(response.broker_epoch)
                assert not client.request(m.broker_heartbeat(1, broker_id, thread.epoch)).is_fenced
            created = client.request(m.create_topics(7, "orders", 0, 0, assignments=[[1, 2, 3]]))
            assert created.topics[0].error_code == 0

            def has_partition(thread: ListenerThread) -> bool:
                return ("orders", 0) in thread.listener.partitions

            for thread in brokers.values():
                wait_for(lambda t=thread: has_partition(t))  # type: ignore[misc]
                view = thread.listener.partitions[("orders", 0)]
                assert (view.leader, view.leader_epoch, view.isr) == (1, 0, (1, 2, 3))
                for request, response in thread.received(4):
                    assert isinstance(request, LeaderAndIsrRequest) and isinstance(response, LeaderAndIsrResponse)
                    assert request.broker_epoch in (-1, thread.epoch)  # v2+: the destination's epoch
                    assert request.controller_epoch == 1 and request.controller_id == 1
                    assert response.error_code == 0

            # broker 2 (a follower) shuts down: it is told to stop; the others learn the new ISR
            shutdown = client.request(m.controlled_shutdown(3, 2, brokers[2].epoch))
            assert shutdown.error_code == 0
            wait_for(lambda: brokers[2].listener.partitions[("orders", 0)].stopped)
            wait_for(lambda: brokers[1].listener.partitions[("orders", 0)].isr == (1, 3))
            stops = brokers[2].received(5)
            request, response = stops[-1]
            assert isinstance(request, StopReplicaRequest) and isinstance(response, StopReplicaResponse)
            assert request.broker_epoch == brokers[2].epoch and response.error_code == 0

            # deleting the topic stops (and deletes) it on the live replicas, with leader epoch -2
            assert client.request(m.delete_topics(6, "orders")).responses[0].error_code == 0
            for broker_id in (1, 3):
                wait_for(lambda b=broker_id: brokers[b].listener.partitions[("orders", 0)].deleted)  # type: ignore[misc]
    finally:
        assert daemon.stop() == 0, daemon.stderr()
