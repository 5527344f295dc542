"""Striped replica placement (Kafka's AdminUtils assignment), rack-aware when brokers have racks.

Brokers are ordered by id, or, when racks are known, alternating across racks (rack A's first,
rack B's first, ..., rack A's second, ...), so that consecutive brokers sit on different racks.
Partition p's first replica is broker (start + p) mod n, spreading leaders evenly; the others
follow at a shift that grows every n partitions, spreading followers. `start` and the initial
shift come from the caller's seeded random source.
"""

from __future__ import annotations

import random
from collections import defaultdict


def rack_alternated(brokers: list[tuple[int, str | None]]) -> list[int]:
    """Broker ids ordered so that consecutive brokers are on different racks where possible."""
    if all(rack is None for _, rack in brokers):
        return sorted(broker_id for broker_id, _ in brokers)
    by_rack: dict[str, list[int]] = defaultdict(list)
    for broker_id, rack in sorted(brokers):
        by_rack[rack or ""].append(broker_id)
    racks = sorted(by_rack)
    ordered: list[int] = []
    for round_index in range(max(len(ids) for ids in by_rack.values())):
        ordered.extend(by_rack[rack][round_index] for rack in racks if round_index < len(by_rack[rack]))
    return ordered


def place_replicas(
    brokers: list[tuple[int, str | None]], partitions: int, replication_factor: int, rng: random.Random
) -> list[tuple[int, ...]]:
    """Replica lists for `partitions` partitions over the given (id, rack) brokers."""
    ordered = rack_alternated(brokers)
    count = len(ordered)
    if not 0 < replication_factor <= count:
        raise ValueError(f"cannot place {replication_factor} replicas on {count} brokers")
    start = rng.randrange(count)
    shift = rng.randrange(count)
    placed = []
    for partition in range(partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        first = (partition + start) % count
        replicas = [ordered[first]]
        for j in range(replication_factor - 1):
            replicas.append(ordered[(first + 1 + (shift + j) % (count - 1)) % count])
        placed.append(tuple(replicas))
    return placed
