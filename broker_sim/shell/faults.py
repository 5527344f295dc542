"""Applying the fault schedule to the brokers of this process.

Rules:
- Faults other than rolling restarts fire at their scheduled time; a fault whose broker is not
  running then (restarting, paused) is skipped and not journalled. A broker's first fault, which
  finds it down only while its first registration is still under way (a fleet started late on a
  loaded machine), waits for it up to a session timeout instead. `FaultInjected` is journalled
  when a fault is applied.
- A controlled shutdown starts only when every partition the broker leads has another ISR member
  that could take over (eligible and caught up, as the leader sees it) and has no fault of its own
  starting in the next two heartbeat intervals. It waits for that up to a session timeout (at
  least `READY_WAIT_S`); then chaos skips the shutdown and a rolling restart goes anyway. So a
  shutdown is rarely stuck on a partition nobody can take over (the controller keeps such a leader
  in place). The broker restarts `duration_s` after the shutdown ends.
- Rolling restart: one broker at a time in the schedule's order; the next goes once the previous
  one is back, unfenced and in the ISR of every partition it hosts (bounded by
  `shutdown_bound_s` + three session timeouts), and rounds repeat while time remains.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from broker_sim.model.schedule import Fault

from .broker import BrokerRunner
from .context import FleetContext

READY_WAIT_S = 3.0
FIRST_START_POLL_S = 0.05


class FaultDriver:
    def __init__(self, ctx: FleetContext, runners: dict[int, BrokerRunner], faults: tuple[Fault, ...]) -> None:
        self.ctx = ctx
        self.runners = runners
        self.faults = faults
        self._starts: dict[int, list[float]] = {}
        self._had_a_fault: set[int] = set()  # brokers whose first fault came
        for fault in faults:
            if ctx.scenario != "rolling-restart" and fault.kind != "drop-connection":
                self._starts.setdefault(fault.broker, []).append(fault.at_s)

    def _failing_soon(self, now: float) -> frozenset[int]:
        """Brokers with a fault of their own starting in the next two heartbeat intervals (by then
        the first ControlledShutdown or WantShutDown heartbeat has moved the leaderships; brokers
        already down or paused are not eligible anyway)."""
        horizon = now + 2 * self.ctx.timing.heartbeat_s
        return frozenset(
            broker for broker, starts in self._starts.items() if any(now <= start < horizon for start in starts)
        )

    async def run(self) -> None:
        if self.ctx.scenario == "rolling-restart":
            await self._rolling()
            return
        async with trio.open_nursery() as nursery:
            for fault in self.faults:
                await self.ctx.sleep_until(fault.at_s)
                nursery.start_soon(self.apply, fault)

    async def apply(self, fault: Fault, *, insist: bool = False) -> bool:
        runner = self.runners[fault.broker]
        if fault.broker not in self._had_a_fault:
            self._had_a_fault.add(fault.broker)
            # a broker's first fault finds it down only if its first registration is still under
            # way (a fleet that started late on a loaded machine): it waits for it, a session
            # timeout at most, so that the schedule's kinds still happen (chaos rotates them over
            # the brokers' first faults)
            with trio.move_on_after(self.ctx.timing.session_timeout_s):
                while not runner.running:
                    await trio.sleep(FIRST_START_POLL_S)
        if not runner.running:
            return False
        if fault.kind == "controlled-shutdown":
            return await self._shutdown(runner, fault, insist)
        self.ctx.recorder.fault(fault.broker, fault.kind, fault.duration_s)
        if fault.kind == "crash":
            runner.end_incarnation(fault.duration_s)
        elif fault.kind == "pause":
            await runner.pause(fault.duration_s)
        elif fault.kind == "drop-connection":
            await runner.drop_connections()
        elif fault.kind == "disk-failure":
            await runner.fail_dir(fault.log_dir, fault.duration_s)
        return True

    async def _shutdown(self, runner: BrokerRunner, fault: Fault, insist: bool) -> bool:
        deadline = self.ctx.now() + max(READY_WAIT_S, self.ctx.timing.session_timeout_s)
        while not runner.model.ready_to_shut_down(self.ctx.now(), self._failing_soon(self.ctx.now())):
            if self.ctx.now() >= deadline:
                if not insist:
                    return False
                break
            await trio.sleep(0.1)
        if not runner.running:
            return False
        self.ctx.recorder.fault(fault.broker, fault.kind, fault.duration_s)
        runner.begin_shutdown(fault.via, fault.duration_s)
        return True

    async def _rolling(self) -> None:
        timing = self.ctx.timing
        await self.ctx.sleep_until(timing.warmup_s)
        while True:
            for fault in self.faults:
                await self._roll(fault)
            await trio.sleep(0.1)  # a round where nothing could go must not spin

    async def _roll(self, fault: Fault) -> None:
        timing = self.ctx.timing
        runner = self.runners[fault.broker]
        await self._wait(lambda: runner.running, timing.session_timeout_s * 3)
        incarnation = runner.model.incarnations
        if await self.apply(fault, insist=True):
            limit = timing.shutdown_bound_s + 3 * timing.session_timeout_s + fault.duration_s
            await self._wait(lambda: runner.model.incarnations > incarnation and runner.caught_up(), limit)

    async def _wait(self, condition: Callable[[], bool], limit_s: float) -> bool:
        deadline = self.ctx.now() + limit_s
        while not condition():
            if self.ctx.now() >= deadline:
                return False
            await trio.sleep(0.1)
        return True
