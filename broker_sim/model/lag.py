"""The follower lag process: when a replica falls behind its leader, as seeded episodes.

Rules: a replica (follower id, topic, partition) lags during episodes drawn from its own
`random.Random(f"{seed}:{follower}:{topic}:{partition}:lag")`: gaps are exponential with mean
`mean_gap_s`, durations uniform in [`MIN_EPISODE_S`, `MAX_EPISODE_S`], none before `warmup_s`, none
after `horizon_s`. Some episodes are shorter than the leader's lag limit (no ISR change) and some
longer (a shrink, then an expansion). The mean gap scales with the cluster's follower replicas,
never with the fleet's broker count, so that a broker lags the same way whatever the process split.
Episodes are computed once per replica, on first use. Time is seconds since the fleet started.
"""

from __future__ import annotations

import random
from bisect import bisect_right

MIN_EPISODE_S = 0.3
MAX_EPISODE_S = 4.0
#: follower replicas in the whole cluster that start a lag episode, per second (at most)
CLUSTER_EPISODES_PER_S = 60.0
MIN_MEAN_GAP_S = 15.0


def mean_gap_for(topics: int, partitions: int, replication_factor: int) -> float:
    """Seconds between a replica's lag episodes, on average."""
    followers = topics * partitions * max(0, replication_factor - 1)
    return max(MIN_MEAN_GAP_S, followers / CLUSTER_EPISODES_PER_S)


def episodes(
    seed: int, follower: int, topic: str, partition: int, *, mean_gap_s: float, warmup_s: float, horizon_s: float
) -> tuple[tuple[float, float], ...]:
    """(start, end) of every lag episode of one replica, in order."""
    rng = random.Random(f"{seed}:{follower}:{topic}:{partition}:lag")
    out: list[tuple[float, float]] = []
    now = warmup_s + rng.expovariate(1 / mean_gap_s)
    while now < horizon_s:
        length = rng.uniform(MIN_EPISODE_S, MAX_EPISODE_S)
        out.append((now, now + length))
        now += length + rng.expovariate(1 / mean_gap_s)
    return tuple(out)


class LagModel:
    """Answers "is this replica lagging at time t" from its episodes."""

    def __init__(self, seed: int, *, mean_gap_s: float, warmup_s: float, horizon_s: float) -> None:
        self.seed = seed
        self.mean_gap_s = mean_gap_s
        self.warmup_s = warmup_s
        self.horizon_s = horizon_s
        self._episodes: dict[tuple[int, str, int], tuple[tuple[float, float], ...]] = {}
        self._starts: dict[tuple[int, str, int], list[float]] = {}

    def lagging(self, follower: int, topic: str, partition: int, t: float) -> bool:
        key = (follower, topic, partition)
        found = self._episodes.get(key)
        if found is None:
            found = self._episodes[key] = episodes(
                self.seed,
                follower,
                topic,
                partition,
                mean_gap_s=self.mean_gap_s,
                warmup_s=self.warmup_s,
                horizon_s=self.horizon_s,
            )
            self._starts[key] = [start for start, _ in found]
        if not found:
            return False
        index = bisect_right(self._starts[key], t) - 1
        return index >= 0 and t < found[index][1]
