"""What a leader learns of its followers from their fetches, over the brokers of this fleet process.

Rules: a follower of this process is caught up when its model says so (running, hosting the replica,
its dir healthy, not restarting, not in a lag episode) and eligible when it is unfenced, not shutting
down and not paused; its epoch is its current broker epoch. A follower run by another fleet process
is seen only through the lag model: caught up outside its lag episodes, eligible, epoch unknown (-1,
which the controller does not check).
A follower of this process the controller must not admit (`ineligible`, for probes): paused for
longer than a session timeout and a heartbeat (so fenced), fenced as it knows, shutting down, its
replica offline, or (named with its previous epoch) registered again less than a session timeout
ago. Followers of other processes are never probed.
"""

from __future__ import annotations

from collections.abc import Mapping

from .broker import BrokerModel
from .lag import LagModel
from .leadership import FollowerState, ProbeTarget
from .lifecycle import Phase
from .timing import Timing

NOT_FETCHING = FollowerState(False, False, -1)


class FleetView:
    def __init__(self, models: Mapping[int, BrokerModel], lag: LagModel, timing: Timing) -> None:
        self.models = models
        self.lag = lag
        self.timing = timing

    def state(self, follower: int, topic: str, partition: int, t: float) -> FollowerState:
        # on every leader's every tick for every follower: one check of each kind, no repeats
        model = self.models.get(follower)
        if model is None:
            return FollowerState(not self.lag.lagging(follower, topic, partition, t), True, -1)
        if not model.running(t):
            return NOT_FETCHING
        lifecycle = model.lifecycle
        eligible = lifecycle.phase is Phase.ACTIVE and model.shutdown is None
        caught_up = model.caught_up_while_running(topic, partition, t) and not self.lag.lagging(
            follower, topic, partition, t
        )
        return FollowerState(caught_up, eligible, lifecycle.epoch)

    def ineligible(self, follower: int, topic: str, partition: int, t: float) -> ProbeTarget | None:
        model = self.models.get(follower)
        if model is None:
            return None
        lifecycle = model.lifecycle
        if t < model.paused_until:
            fenced_since = model.paused_at + self.timing.session_timeout_s + self.timing.heartbeat_s
            return ProbeTarget(follower, lifecycle.epoch, "fenced") if t > fenced_since else None
        if not lifecycle.registered or model.incarnation_over:
            return None
        if lifecycle.phase is Phase.FENCED:
            return ProbeTarget(follower, lifecycle.epoch, "fenced")
        if model.shutdown is not None:
            return ProbeTarget(follower, lifecycle.epoch, "shutting-down")
        if model.disks.offline(topic, partition):
            return ProbeTarget(follower, lifecycle.epoch, "offline")
        if lifecycle.previous_epoch >= 0 and t < model.ready_at + self.timing.session_timeout_s:
            return ProbeTarget(follower, lifecycle.previous_epoch, "previous-epoch")
        return None
