"""Live counters of a fleet run: what the display shows, the report holds and fleet processes merge.

Rules: plain counters updated by the shell as things happen (no clock here: the caller passes
times); `snapshot()` is a JSON-ready dict, and `merge` adds another process's snapshot, so a run
spread over several OS processes reports one set of figures. Latencies are kept as a bounded
reservoir per API (seeded, so a run's figures replay), enough for p50/p99. A run with its own
controller quorum (`--quorum`) also counts its controller faults by action and keeps each
failover's measurement (`failovers`: a JSON-ready dict each, as `failover_record` makes them).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

RESERVOIR = 4096


#: the Counter fields, added up when the figures of several fleet processes are merged
COUNTERS = (
    "brokers_by_state",
    "requests_by_api",
    "errors_by_code",
    "control_requests_by_api",
    "faults",
    "probes",
    "controller_switches",
    "controller_faults",
)


@dataclass
class FleetStats:
    brokers_by_state: Counter[str] = field(default_factory=Counter)  # set by the shell each tick
    requests_by_api: Counter[str] = field(default_factory=Counter)
    errors_by_code: Counter[str] = field(default_factory=Counter)  # "AlterPartition:FENCED_LEADER_EPOCH"
    control_requests_by_api: Counter[str] = field(default_factory=Counter)  # LeaderAndIsr, StopReplica received
    faults: Counter[str] = field(default_factory=Counter)
    stale_replays_sent: int = 0
    stale_replays_rejected: int = 0
    probes: Counter[str] = field(default_factory=Counter)  # "shutting-down:INELIGIBLE_REPLICA", "fenced:NONE", ...
    #: moves to the next controller of the list, by reason ("not-controller", "connect-failed", "connection-lost")
    controller_switches: Counter[str] = field(default_factory=Counter)
    #: the fleet's own quorum (`--quorum`): actions on its nodes ("kill", "restart", "pause", "resume", "cut", "heal")
    controller_faults: Counter[str] = field(default_factory=Counter)
    failovers: list[dict[str, Any]] = field(default_factory=list)  # one per controller fault, in order
    violations: list[str] = field(default_factory=list)
    latencies_ms: dict[str, list[float]] = field(default_factory=dict)  # per API, a reservoir
    latency_counts: Counter[str] = field(default_factory=Counter)
    heartbeat_lateness_ms: list[float] = field(default_factory=list)  # a reservoir
    heartbeats: int = 0
    rng: random.Random = field(default_factory=lambda: random.Random(0))

    def request(self, api: str, latency_ms: float | None, error: str | None) -> None:
        """One answered (or failed: latency None) request of the fleet."""
        self.requests_by_api[api] += 1
        if error is not None:
            self.errors_by_code[f"{api}:{error}"] += 1
        if latency_ms is not None:
            self.latency_counts[api] += 1
            _keep(self.latencies_ms.setdefault(api, []), latency_ms, self.latency_counts[api], self.rng)

    def heartbeat(self, lateness_ms: float) -> None:
        """A heartbeat sent `lateness_ms` after it was due (0 when on time)."""
        self.heartbeats += 1
        _keep(self.heartbeat_lateness_ms, lateness_ms, self.heartbeats, self.rng)

    def snapshot(self) -> dict[str, Any]:
        return {
            "brokers_by_state": dict(self.brokers_by_state),
            "requests_by_api": dict(self.requests_by_api),
            "errors_by_code": dict(self.errors_by_code),
            "control_requests_by_api": dict(self.control_requests_by_api),
            "faults": dict(self.faults),
            "stale_replays_sent": self.stale_replays_sent,
            "stale_replays_rejected": self.stale_replays_rejected,
            "probes": dict(self.probes),
            "controller_switches": dict(self.controller_switches),
            "controller_faults": dict(self.controller_faults),
            "failovers": [dict(failover) for failover in self.failovers],
            "violations": list(self.violations),
            "latencies_ms": {api: list(values) for api, values in self.latencies_ms.items()},
            "latency_counts": dict(self.latency_counts),
            "heartbeat_lateness_ms": list(self.heartbeat_lateness_ms),
            "heartbeats": self.heartbeats,
        }

    def merge(self, other: dict[str, Any]) -> None:
        """Add another fleet process's `snapshot()`."""
        for name in COUNTERS:
            getattr(self, name).update(other.get(name, {}))
        self.stale_replays_sent += int(other.get("stale_replays_sent", 0))
        self.stale_replays_rejected += int(other.get("stale_replays_rejected", 0))
        self.violations.extend(other.get("violations", []))
        self.failovers.extend(other.get("failovers", []))
        for api, values in other.get("latencies_ms", {}).items():
            merged = self.latencies_ms.setdefault(api, [])
            merged.extend(values)
            del merged[RESERVOIR:]
        self.latency_counts.update(other.get("latency_counts", {}))
        self.heartbeat_lateness_ms.extend(other.get("heartbeat_lateness_ms", []))
        del self.heartbeat_lateness_ms[RESERVOIR:]
        self.heartbeats += int(other.get("heartbeats", 0))


def _keep(reservoir: list[float], value: float, seen: int, rng: random.Random) -> None:
    """Reservoir sampling (Algorithm R): every value seen so far is kept with equal probability."""
    if len(reservoir) < RESERVOIR:
        reservoir.append(value)
        return
    slot = rng.randrange(seen)
    if slot < RESERVOIR:
        reservoir[slot] = value


def percentile(values: list[float], fraction: float) -> float | None:
    """The nearest-rank percentile of `values` (None when empty)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-int(fraction * 1000) * len(ordered) // 1000))
    return ordered[min(rank, len(ordered)) - 1]


def failover_summary(failovers: list[dict[str, Any]]) -> dict[str, Any]:
    """The failovers of a run with its own quorum, in figures: how many faults hit the leader, and over
    those, p50/p99 of the time until a new leader was elected and until a broker was served again (a
    follower's fault elects nobody and barely delays the brokers: its times are in the list only);
    `never_elected` and `never_served`: faults whose measurement ended without that time."""
    of_leader = [failover for failover in failovers if failover.get("role") == "leader"]
    elected = [f["elected_ms"] for f in of_leader if f.get("elected_ms") is not None]
    served = [f["served_ms"] for f in of_leader if f.get("served_ms") is not None]
    return {
        "faults": len(failovers),
        "of_the_leader": len(of_leader),
        "elected_ms": {"p50": percentile(elected, 0.50), "p99": percentile(elected, 0.99)},
        "served_ms": {"p50": percentile(served, 0.50), "p99": percentile(served, 0.99)},
        "never_elected": len(of_leader) - len(elected),
        "never_served": sum(1 for failover in failovers if failover.get("served_ms") is None),
    }
