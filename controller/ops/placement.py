"""Striped replica placement (Kafka's AdminUtils assignment), rack-aware when brokers have racks.

Brokers are ordered by id, or, when racks are known, alternating across racks (rack A's first,
rack B's first, ..., rack A's second, ...), so that consecutive brokers sit on different racks.
Partition p's first replica is broker (start + p) mod n, spreading leaders evenly; the others
follow at a shift that grows every n partitions, spreading followers. `start` and the initial
shift come from the caller's seeded random source.

With racks (Kafka's `assignReplicasToBrokersRackAware`) the shift is scaled by the number of
racks, and a candidate is skipped if it already holds a replica of the partition, or if its rack
does while some rack holds none: a partition's replicas span min(replication factor, racks)
racks. Brokers without a rack share one unnamed rack.
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


def _replica_index(first: int, shift: int, replica: int, count: int) -> int:
    return (first + 1 + (shift + replica) % (count - 1)) % count


def _rack_aware(ordered: list[int], racks: dict[int, str], first: int, shift: int, factor: int) -> list[int]:
    """One partition's replicas: the first, then candidates on unused racks and brokers first."""
    rack_count = len(set(racks.values()))
    replicas = [ordered[first]]
    used_racks = {racks[ordered[first]]}
    candidate = 0
    while len(replicas) < factor:
        broker = ordered[_replica_index(first, shift * rack_count, candidate, len(ordered))]
        candidate += 1
        rack = racks[broker]
        if (rack not in used_racks or len(used_racks) == rack_count) and broker not in replicas:
            replicas.append(broker)
            used_racks.add(rack)
    return replicas


def place_replicas(
    brokers: list[tuple[int, str | None]], partitions: int, replication_factor: int, rng: random.Random
) -> list[tuple[int, ...]]:
    """Replica lists for `partitions` partitions over the given (id, rack) brokers."""
    ordered = rack_alternated(brokers)
    count = len(ordered)
    if not 0 < replication_factor <= count:
        raise ValueError(f"cannot place {replication_factor} replicas on {count} brokers")
    racks = {broker_id: rack or "" for broker_id, rack in brokers}
    rack_aware = any(rack is not None for _, rack in brokers)
    start = rng.randrange(count)
    shift = rng.randrange(count)
    placed = []
    for partition in range(partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        first = (partition + start) % count
        if rack_aware:
            replicas = _rack_aware(ordered, racks, first, shift, replication_factor)
        else:
            replicas = [ordered[first]]
            replicas.extend(ordered[_replica_index(first, shift, j, count)] for j in range(replication_factor - 1))
        placed.append(tuple(replicas))
    return placed
