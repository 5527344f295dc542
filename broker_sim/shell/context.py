"""What every part of one fleet process shares: configuration, clock, models, topic ids, recorder."""

from __future__ import annotations

import ssl
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

from broker_sim.model.answers import not_controller
from broker_sim.model.broker import BrokerModel
from broker_sim.model.timing import Timing
from protocol.spec import Data

from .recorder import Recorder


@dataclass
class FleetContext:
    controllers: tuple[tuple[str, int], ...]  # every connection starts at the first (see `connection`)
    listen_host: str
    seed: int
    scenario: str
    duration_s: float
    timing: Timing
    recorder: Recorder
    t0: float  # trio.current_time() when the fleet started: model time 0
    models: dict[int, BrokerModel] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)  # learnt from CreateTopics and LeaderAndIsr v5+
    last_answer: float = 0.0  # model time of the (active) controller's last answer
    #: told of every answer to a broker's request that is not NOT_CONTROLLER: (model time, HOST:PORT
    #: of the controller that answered); the fleet's own quorum times its failovers with it
    on_served: list[Callable[[float, str], None]] = field(default_factory=list)
    #: TLS (`broker_sim.shell.tls`): the context of every connection to a controller, and of the
    #: brokers' control listeners (registered as SSL); None: plain TCP
    client_tls: ssl.SSLContext | None = None
    listener_tls: ssl.SSLContext | None = None

    def now(self) -> float:
        return trio.current_time() - self.t0

    def answered(self, t: float, response: Data, peer: str | None = None) -> None:
        """An answer came at `t` (from `peer`, for a broker's request; None for the admin's); one that
        says NOT_CONTROLLER is no answer of the active controller."""
        if not not_controller(response):
            self.last_answer = t
            if peer is not None:
                for served in self.on_served:
                    served(t, peer)

    async def sleep_until(self, t: float) -> None:
        await trio.sleep_until(self.deadline(t))

    def deadline(self, t: float) -> float:
        """Trio's time for model time `t`, at least a microsecond ahead: `t0 + t` may round to the
        clock's reading while `now()` still reads just below `t`, and a loop waiting for `t` would
        spin without the clock moving (a simulation's clock moves only when every task waits)."""
        return max(self.t0 + t, trio.current_time() + 1e-6)
