"""The controller faults of a run with its own quorum (`--quorum`): the schedule applied to the nodes,
the quorum's leader watched, and each failover timed.

Rules:
- The quorum's nodes and timeouts are journalled first (`QuorumStarted`). A watcher asks every node
  DescribeQuorum every `poll_s` (`POLL_S` unless given; `Quorum.round`) for the whole run: each
  leader (or epoch) not seen before is journalled (`QuorumLeaderSeen`), and the measurements in progress
  (`model.quorum.FailoverClock`) hear of it; so is every round whose nodes answering as leaders
  differ from the round before's (`QuorumLeadersSeen`: a deposed leader that goes on saying it
  leads shows there); every answer to a broker's request (`FleetContext.on_served`) goes to the
  measurements too, with the node that gave it.
- While a fault is on, the fleet probes the quorum (`quorum_probes`): pre-votes for a stale log,
  from the fault's start until its measurement is over, and a write at the node it cut off or
  paused, right after doing so.
- Faults come one at a time, in the schedule's order (`model.schedule.controller_fault_schedule`),
  each at its time or later: not before the quorum is whole again (every node running, unpaused,
  connected and answering; waited for up to `WHOLE_WAIT_S`, then the fault goes anyway) and the
  previous failover's measurement is over. A fault that could no longer end `TAIL_S` before the run
  does is not started.
- The target is resolved when the fault starts: the leader the watcher saw last, or the
  `pick`-th follower by id (with no leader known: the `pick`-th node, counted as a follower).
- Each action is journalled (`ControllerFaulted`, with the leader as last seen) just before it is
  taken; each fault's measurement is journalled and kept in the stats when it is over: both times
  known, or `MEASURE_S` after the fault began, or the end of the run (with what is known then).
- `finished` is set once every fault of the schedule was applied (or skipped) and measured; the
  watcher goes on until the run ends.
- When the run ends during a fault, its measurement is closed there; the quorum's `stop` resumes a
  paused node before stopping it. A node killed at the end stays down (its log is checked as it is).
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import trio

from broker_sim.model.quorum import FOLLOWER, LEADER, Failover, FailoverClock, LeaderView
from broker_sim.model.schedule import TAIL_S, ControllerFault

from .context import FleetContext
from .quorum import Quorum
from .quorum_probes import VoteProber, write_at

log = logging.getLogger("fencer.broker_sim.quorum_faults")
POLL_S = 0.1
WHOLE_WAIT_S = 20.0
MEASURE_S = 30.0


class ControllerFaults:
    def __init__(
        self, quorum: Quorum, faults: tuple[ControllerFault, ...], duration_s: float, poll_s: float = POLL_S
    ) -> None:
        self.poll_s = poll_s
        self.quorum = quorum
        self.faults = faults
        self.duration_s = duration_s
        self.clock = FailoverClock()
        self.leader: LeaderView | None = None  # as the watcher saw it last
        self.answered: frozenset[int] = frozenset()
        self.seen: set[tuple[int, int]] = set()  # (leader, epoch) journalled
        self.finished = trio.Event()
        self._ctx: FleetContext | None = None
        self._nursery: trio.Nursery | None = None
        self.claims: list[tuple[int, int]] = []  # (node, epoch) of every node that said it leads, last round
        self.votes = VoteProber(quorum, quorum.plan.cluster_id)
        self._probing = trio.CancelScope()  # the pre-votes of the fault in progress
        self._writes = itertools.count()

    async def run(self, ctx: FleetContext) -> None:
        """Watch the quorum and apply the faults until cancelled (the end of the run)."""
        self._ctx = ctx
        ctx.on_served.append(self._served)
        timing = self.quorum.plan.timing
        ctx.recorder.quorum_started(self.quorum.ids, timing.election_timeout_s, timing.fetch_timeout_s)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(self._watch)
                await self._faults(ctx)
                self.finished.set()
        finally:
            self._record(self.clock.close_all())

    async def _faults(self, ctx: FleetContext) -> None:
        """The schedule's faults, one at a time (see the module rules)."""
        for fault in self.faults:
            await ctx.sleep_until(fault.at_s)
            await self._wait_whole()
            if ctx.now() + fault.duration_s > self.duration_s - TAIL_S:
                log.info("controller fault %s skipped: it could not end before the run does", fault)
                continue
            failover = await self._apply(fault)
            await self._measured(failover)
            self._probing.cancel()

    # ------------------------------------------------------------------ the watcher
    async def _watch(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self._look()
        task_status.started()
        while True:
            await trio.sleep(self.poll_s)
            await self._look()

    async def _look(self) -> None:
        ctx = self._ctx
        assert ctx is not None
        found = await self.quorum.round()
        self.answered = found.answered
        claims = [(node, view.leader_epoch) for node, view in sorted(found.claims.items())]
        if claims != self.claims:
            self.claims = claims
            ctx.recorder.quorum_leaders(claims)
        view = found.leader
        if view is None:
            return
        self.leader = view
        if (view.leader_id, view.leader_epoch) not in self.seen:
            self.seen.add((view.leader_id, view.leader_epoch))
            ctx.recorder.quorum_leader(view)
        self._record(self.clock.leader_seen(view, ctx.now()))

    def _served(self, t: float, peer: str) -> None:
        self._record(self.clock.served(self.quorum.node_of(peer), t))

    def _record(self, finished: list[Failover]) -> None:
        if self._ctx is None:
            return
        for failover in finished:
            self._ctx.recorder.failover(failover)

    # ------------------------------------------------------------------ the faults
    async def _wait_whole(self) -> None:
        with trio.move_on_after(WHOLE_WAIT_S):
            while not (self.quorum.whole(self.answered) and self.leader is not None):
                await trio.sleep(self.poll_s)

    def target(self, fault: ControllerFault) -> tuple[int, str]:
        """The node the fault hits, and its role (see the module rules)."""
        ids = self.quorum.ids
        if self.leader is None:
            return ids[fault.pick % len(ids)], FOLLOWER
        followers = [node for node in ids if node != self.leader.leader_id]
        if fault.target == LEADER or not followers:
            return self.leader.leader_id, LEADER
        return followers[fault.pick % len(followers)], FOLLOWER

    async def _apply(self, fault: ControllerFault) -> Failover:
        ctx = self._ctx
        assert ctx is not None
        node, role = self.target(fault)
        failover = self.clock.begin(ctx.now(), node, fault.kind, role, self.leader)
        recorder, quorum = ctx.recorder, self.quorum
        recorder.controller_fault(node, fault.kind, fault.duration_s, self.leader)
        self._probing = trio.CancelScope()
        self._start(self._pre_votes, self._probing, node, self.leader)
        if fault.kind == "kill":
            await quorum.kill(node)
            await trio.sleep(fault.duration_s)
            recorder.controller_fault(node, "restart", 0.0, self.leader)
            await quorum.restart(node)
        elif fault.kind == "pause":
            quorum.pause(node)
            self._start(write_at, ctx, quorum.addresses[node], next(self._writes))
            await trio.sleep(fault.duration_s)
            recorder.controller_fault(node, "resume", 0.0, self.leader)
            quorum.resume(node)
        elif fault.kind == "cut":
            quorum.cut(node)
            self._start(write_at, ctx, quorum.addresses[node], next(self._writes))
            await trio.sleep(fault.duration_s)
            recorder.controller_fault(node, "heal", 0.0, self.leader)
            quorum.heal(node)
        return failover

    def _start(self, task: Any, *args: Any) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(task, *args)

    async def _pre_votes(self, scope: trio.CancelScope, node: int, before: LeaderView | None) -> None:
        assert self._ctx is not None
        with scope:
            await self.votes.run(self._ctx, node, before)

    async def _measured(self, failover: Failover) -> None:
        """Wait until `failover`'s measurement is over (or close it `MEASURE_S` after the fault began)."""
        ctx = self._ctx
        assert ctx is not None
        with trio.move_on_at(ctx.t0 + failover.at + MEASURE_S):
            while failover in self.clock.open:
                await trio.sleep(self.poll_s)
            return
        self._record(self.clock.close(failover))
