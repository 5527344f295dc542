"""Bugs planted in the controller the simulator runs in its own process (`python -m broker_sim sim
--patch tests.broker_sim.sim.planted:NAME`): bugs of the failover path that the wall-clock fleet does
not see. Nothing in broker_sim knows them."""

from __future__ import annotations

import dataclasses
from typing import Any


def fetch_timer_never_reset() -> None:
    """A follower's fetch timer is not reset by a successful fetch: it times out one fetch timeout
    after it began following, and deposes its healthy leader, over and over."""
    from controller.raft import outbound

    original = outbound.fetch

    def fetch(node: Any, now_ms: int, response: Any) -> bool:
        deadline = getattr(node.state, "fetch_deadline_ms", None)
        handled: bool = original(node, now_ms, response)
        if deadline is not None and hasattr(node.state, "fetch_deadline_ms"):
            node.state = dataclasses.replace(node.state, fetch_deadline_ms=deadline)
        return handled

    outbound.fetch = fetch


def activation_on_a_wrong_clock() -> None:
    """KAFKA-14392: a new active controller starts every broker's session from a time a minute
    back, so its first session sweep fences every live broker (and their next heartbeats unfence
    them: no broker is ever answered fenced)."""
    from controller.engine import ControllerEngine

    original = ControllerEngine.activate

    def activate(self: Any, now_ns: int) -> None:
        original(self, now_ns - 60_000_000_000)

    ControllerEngine.activate = activate  # type: ignore[method-assign]
