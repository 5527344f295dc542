"""What every part of one fleet process shares: configuration, clock, models, topic ids, recorder."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import trio

from broker_sim.model.broker import BrokerModel
from broker_sim.model.timing import Timing

from .recorder import Recorder


@dataclass
class FleetContext:
    controller_host: str
    controller_port: int
    listen_host: str
    seed: int
    scenario: str
    duration_s: float
    timing: Timing
    recorder: Recorder
    t0: float  # trio.current_time() when the fleet started: model time 0
    models: dict[int, BrokerModel] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)  # learnt from CreateTopics and LeaderAndIsr v5+
    last_answer: float = 0.0  # model time of the controller's last answer

    def now(self) -> float:
        return trio.current_time() - self.t0

    async def sleep_until(self, t: float) -> None:
        await trio.sleep_until(self.t0 + t)
