"""Controller core benchmark: decisions, replay, start-up, and a large controlled shutdown.

Run: `make bench-core` (or `.venv/bin/python benchmarks/core.py [--quick]`).

Prints, in one run on this machine:
- AlterPartition operations/s through the core (decide + replay + control orders), one ISR
  change per request on distinct partitions;
- replay records/s (decoded records into a fresh core) and read+decode+replay records/s from a
  real on-disk log;
- start-up time from a log of 1,000,000 records, and from a snapshot of 100,000 partitions
  (RF 3) plus a 100,000-record tail (open, recover, load, replay);
- the time and record count for a controlled shutdown of a broker leading 10,000 partitions
  (RF 3), in the core.
Targets: replay >= 100,000 records/s; that controlled shutdown < 0.5 s (Kafka 1.1
took 3 s for a comparable broker); start-up from the snapshot < 5 s.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.codec import machine
from controller.core import ControllerCore, batches
from controller.state.controller_state import ControllerConfig
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
)
from protocol.messages.controlled_shutdown import ControlledShutdownRequest
from protocol.records.metadata import (
    UNASSIGNED_DIRECTORY,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    TopicRecord,
)
from protocol.spec import Data

CLUSTER_ID = "benchmark-cluster-id-0"
BROKERS = 6


def new_core() -> ControllerCore:
    return ControllerCore(ControllerConfig(cluster_id=CLUSTER_ID, node_id=3000), random.Random(1))


def brokers_records(brokers: int = BROKERS) -> list[tuple[Data, int]]:
    return [
        (
            RegisterBrokerRecord(
                broker_id=b,
                incarnation_id=uuid.UUID(int=b + 1),
                broker_epoch=b,
                end_points=(RegisterBrokerRecordBrokerEndpoint(name="PLAINTEXT", host="localhost", port=9000 + b),),
                fenced=False,
            ),
            3,
        )
        for b in range(brokers)
    ]


def topic_records(
    name: str, partitions: int, leader_of: int | None = None, brokers: int = BROKERS
) -> tuple[uuid.UUID, list[tuple[Data, int]]]:
    """A topic whose partition p has replicas (a, b, c) over `brokers` brokers; `leader_of` leads them all."""
    topic_id = uuid.UUID(int=random.Random(name).getrandbits(128), version=4)
    records: list[tuple[Data, int]] = [(TopicRecord(name=name, topic_id=topic_id), 0)]
    for p in range(partitions):
        first = leader_of if leader_of is not None else p % brokers
        others = [b for b in range(brokers) if b != first]
        replicas = (first, others[p % len(others)], others[(p + 1) % len(others)])
        records.append(
            (
                PartitionRecord(
                    partition_id=p,
                    topic_id=topic_id,
                    replicas=replicas,
                    isr=replicas,
                    leader=first,
                    leader_epoch=0,
                    partition_epoch=0,
                    directories=(UNASSIGNED_DIRECTORY,) * 3,
                ),
                1,
            )
        )
    return topic_id, records


def load(core: ControllerCore, records: list[tuple[Data, int]]) -> None:
    for offset, (record, _) in enumerate(records, start=core.state.last_offset + 1):
        core.replay(record, offset)


def bench_alter_partition(count: int) -> str:
    core = new_core()
    topic_id, records = topic_records("alter", count)
    load(core, brokers_records() + records)
    requests = []
    for p in range(count):
        part = core.state.replication.topics[topic_id].partitions[p]
        shrunk = part.isr[:2]
        requests.append(
            AlterPartitionRequest(
                broker_id=part.leader,
                broker_epoch=part.leader,
                topics=(
                    AlterPartitionRequestTopicData(
                        topic_id=topic_id,
                        partitions=(
                            AlterPartitionRequestPartitionData(
                                partition_index=p, leader_epoch=0, new_isr=shrunk, partition_epoch=0
                            ),
                        ),
                    ),
                ),
            )
        )
    started = time.perf_counter()
    offset = core.state.last_offset + 1
    for request in requests:
        result = core.handle(56, 2, request, 0, offset)
        placed = [(record, offset + i) for i, (record, _) in enumerate(result.records)]
        core.apply(placed)
        offset += len(placed)
        assert result.response.topics[0].partitions[0].error_code == 0  # type: ignore[union-attr]
    elapsed = time.perf_counter() - started
    return f"| AlterPartition through the core (decide + replay + control orders) | {count / elapsed:,.0f} ops/s |"


def bench_replay(count: int) -> str:
    topic_id, records = topic_records("replay", 1000)
    changes: list[tuple[Data, int]] = [
        (PartitionChangeRecord(partition_id=i % 1000, topic_id=topic_id, isr=(i % BROKERS,), leader=i % BROKERS), 0)
        for i in range(count)
    ]
    core = new_core()
    load(core, brokers_records() + records)
    started = time.perf_counter()
    load(core, changes)
    elapsed = time.perf_counter() - started
    return f"| replay of decoded PartitionChangeRecords | {count / elapsed:,.0f} records/s |"


def bench_controlled_shutdown(partitions: int) -> str:
    """The decision in its steps (`core.batches`), each batch replayed before the next is decided,
    as the engine does."""
    core = new_core()
    _, records = topic_records("shutdown", partitions, leader_of=0)
    load(core, brokers_records() + records)
    offset = core.state.last_offset + 1
    decide_s = replay_s = 0.0
    written = orders = 0
    started = time.perf_counter()
    steps = batches(core.handle(7, 3, ControlledShutdownRequest(broker_id=0, broker_epoch=0), 0, offset))
    while True:
        step_started = time.perf_counter()
        try:
            batch = next(steps)
        except StopIteration as stop:
            response = stop.value
            decide_s += time.perf_counter() - step_started
            break
        decided = time.perf_counter()
        decide_s += decided - step_started
        orders += len(core.apply([(record, offset + i) for i, (record, _) in enumerate(batch)]))
        offset += len(batch)
        written += len(batch)
        replay_s += time.perf_counter() - decided
    done = time.perf_counter()
    remaining = len(response.remaining_partitions)
    assert remaining == 0 and len(core.state.replication.led_by(0)) == 0
    return (
        f"| controlled shutdown of a broker leading {partitions:,} partitions (RF 3) | {done - started:.3f} s "
        f"({decide_s:.3f} s decide, {replay_s:.3f} s replay + {orders} control orders), "
        f"{written:,} records |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run, not the figures)")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    print(f"# fencer core benchmark, {time.strftime('%Y-%m-%d')}, {machine()}")
    print()
    print("| measurement | result |")
    print("|---|---|")
    print(bench_alter_partition(20_000 // scale))
    print(bench_replay(500_000 // scale))
    print(bench_controlled_shutdown(10_000 // scale))
    with tempfile.TemporaryDirectory(prefix="fencer-bench-") as tmp:
        from benchmarks.core_startup import bench_startup_from_log, bench_startup_from_snapshot

        print(bench_startup_from_log(Path(tmp) / "log", 1_000_000 // scale))
        print(bench_startup_from_snapshot(Path(tmp) / "snapshot", 100_000 // scale, 100_000 // scale))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
