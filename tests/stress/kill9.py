"""Durability under SIGKILL: every change acknowledged before the kill survives the restart.

Run on demand: `.venv/bin/python tests/stress/kill9.py --rounds 20` (the suite runs 3 rounds).

Each round: several client connections send AlterPartition ISR changes (shrink, expand, ...)
for partitions of their own, as fast as the daemon answers; at a random moment the daemon is
killed with SIGKILL; it is restarted on the same data dir; its `/state` must show, for every
partition, the last acknowledged change or the one request that was in flight after it
(never less, never anything else). The next round continues from the recovered state.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
)
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.messages.broker_registration import (
    BrokerRegistrationRequest,
    BrokerRegistrationRequestListener,
)
from protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableReplicaAssignment,
    CreateTopicsRequestCreatableTopic,
)
from protocol.messages.describe_cluster import DescribeClusterRequest
from tests.e2e.daemon_process import DaemonProcess, free_port
from tests.e2e.fencer_client import FencerClient

BROKERS = (1, 2, 3)


@dataclass
class Acked:
    """The last acknowledged state of a partition, and whether a request was in flight after it."""

    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    in_flight: tuple[int, ...] | None = None


@dataclass
class Cluster:
    topic_id: uuid.UUID
    epochs: dict[int, int]
    replicas: dict[int, tuple[int, ...]] = field(default_factory=dict)
    partitions: dict[int, Acked] = field(default_factory=dict)


def fetch_state(metrics_port: int) -> dict[str, object]:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/state", timeout=10) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def setup(port: int, partitions: int, rotation: Callable[[int], int] = lambda p: p) -> Cluster:
    """Three brokers and a topic whose partition p has replicas rotated by `rotation(p)` (the first leads)."""
    replicas = {p: tuple(BROKERS[(rotation(p) + i) % 3] for i in range(3)) for p in range(partitions)}
    with FencerClient(port) as client:
        cluster_id = client.request(DescribeClusterRequest(), 1).cluster_id
        epochs = {}
        for broker in BROKERS:
            listener = BrokerRegistrationRequestListener(name="PLAINTEXT", host="127.0.0.1", port=1)
            request = BrokerRegistrationRequest(
                broker_id=broker, cluster_id=cluster_id, incarnation_id=uuid.UUID(int=broker), listeners=(listener,)
            )
            epochs[broker] = client.request(request, 3).broker_epoch
            client.request(
                BrokerHeartbeatRequest(broker_id=broker, broker_epoch=epochs[broker], current_metadata_offset=1 << 40),
                1,
            )
        assignments = tuple(
            CreateTopicsRequestCreatableReplicaAssignment(partition_index=p, broker_ids=replicas[p])
            for p in range(partitions)
        )
        topic = CreateTopicsRequestCreatableTopic(
            name="stress", num_partitions=-1, replication_factor=-1, assignments=assignments
        )
        result = client.request(CreateTopicsRequest(topics=(topic,)), 7).topics[0]
        assert result.error_code == 0, result
    cluster = Cluster(result.topic_id, epochs, replicas)
    for p in range(partitions):
        cluster.partitions[p] = Acked(replicas[p][0], 0, 0, replicas[p])
    return cluster


def client_loop(port: int, cluster: Cluster, owned: list[int], stop: threading.Event, rng: random.Random) -> int:
    """Send ISR changes for `owned` partitions until the connection dies; return how many were acked."""
    acked = 0
    try:
        with FencerClient(port, timeout=30) as client:
            while not stop.is_set():
                p = rng.choice(owned)
                state = cluster.partitions[p]
                replicas = cluster.replicas[p]
                isr = replicas[:2] if len(state.isr) == 3 else replicas
                data = AlterPartitionRequestPartitionData(
                    partition_index=p,
                    leader_epoch=state.leader_epoch,
                    new_isr=isr,
                    partition_epoch=state.partition_epoch,
                )
                request = AlterPartitionRequest(
                    broker_id=state.leader,
                    broker_epoch=cluster.epochs[state.leader],
                    topics=(AlterPartitionRequestTopicData(topic_id=cluster.topic_id, partitions=(data,)),),
                )
                state.in_flight = isr
                result = client.request(request, 2).topics[0].partitions[0]
                if result.error_code != 0:
                    raise AssertionError(f"partition {p}: error {result.error_code}")
                cluster.partitions[p] = Acked(
                    state.leader, result.leader_epoch, result.partition_epoch, tuple(result.isr)
                )
                acked += 1
    except (ConnectionError, OSError):
        pass
    return acked


def _count(
    counts: list[int], port: int, cluster: Cluster, owned: list[int], stop: threading.Event, rng: random.Random
) -> None:
    counts.append(client_loop(port, cluster, owned, stop, rng))


def check_recovered(cluster: Cluster, state: dict[str, object]) -> None:
    topics = {t["name"]: t for t in state["topics"]}  # type: ignore[attr-defined, index]
    for part in topics["stress"]["partitions"]:
        acked = cluster.partitions[part["partition"]]
        recovered = (part["partition_epoch"], tuple(part["isr"]))
        allowed = [(acked.partition_epoch, acked.isr)]
        if acked.in_flight is not None:
            allowed.append((acked.partition_epoch + 1, acked.in_flight))
        assert recovered in allowed, f"partition {part['partition']}: recovered {recovered}, acknowledged {allowed}"
        cluster.partitions[part["partition"]] = Acked(part["leader"], part["leader_epoch"], *recovered)


def run(rounds: int, seed: int, data_dir: Path, clients: int = 4, partitions: int = 24, verbose: bool = True) -> int:
    rng = random.Random(seed)
    metrics_port = free_port()
    args = ("--metrics-listen", f"127.0.0.1:{metrics_port}", "--session-timeout-ms", "600000")
    daemon = DaemonProcess(data_dir, *args).start()
    cluster = setup(daemon.port, partitions)
    total = 0
    try:
        for round_number in range(1, rounds + 1):
            stop = threading.Event()
            counts: list[int] = []
            owned = [list(range(i, partitions, clients)) for i in range(clients)]
            threads = [
                threading.Thread(
                    target=_count, args=(counts, daemon.port, cluster, o, stop, random.Random(rng.random()))
                )
                for o in owned
            ]
            for thread in threads:
                thread.start()
            time.sleep(rng.uniform(0.3, 1.5))
            daemon.kill()
            stop.set()
            for thread in threads:
                thread.join(30)
            daemon = DaemonProcess(data_dir, *args).start()
            check_recovered(cluster, fetch_state(metrics_port))
            total += sum(counts)
            if verbose:
                print(
                    f"round {round_number}: {sum(counts)} changes acknowledged before SIGKILL, all recovered",
                    flush=True,
                )
    finally:
        daemon.stop()
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="SIGKILL durability stress for the fencer daemon")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fencer-kill9-") as tmp:
        total = run(args.rounds, args.seed, Path(tmp) / "data", clients=args.clients)
    print(f"{args.rounds} rounds, {total} acknowledged changes, all recovered after SIGKILL")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
