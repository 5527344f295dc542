"""Kafka's Raft simulation scenarios (RaftEventSimulationTest, each by its name there) played on the
whole simulated cluster: the real daemons, the fleet's brokers writing through them.

Rules:
- A scenario is a script of controller faults, each step waiting for what Kafka's test waits
  for (a leader, a leader other than the one faulted) up to `STEP_BOUND` deposition times
  (`QuorumTiming.deposed_s`); a step that does not happen in time is a violation
  (`sim-scenario-stuck`) and ends the script. The fleet runs its `steady` scenario beside it, so
  the log grows by the brokers' registrations, heartbeats' fences and ISR changes, not by a
  counter as in Kafka's test.
- Every action on a node is journalled as the fleet's controller faults are (`ControllerFaulted`:
  "kill", "shutdown", "wipe", "restart", "cut", "heal"); a split is journalled as a "cut" of
  each minority node, and its end as their "heal".
- Each script ends when every running node reached the high watermark its leader had when the
  last step was taken (Kafka's `allReachedHighWatermark`), within the same bound.
- The voters: a seeded number in the scenario's range (Kafka's `@IntRange`), unless given.
- Observers: none (fencer's quorum has none: Kafka's tests add 0-5, which only fetch).
- The leader of a step is the newest epoch's leader among the nodes' Raft cores (`RaftWatch`).
- `initial-election` (canElectInitialLeader): 1-5 voters elect a leader; no fault.
- `leader-failure` (canElectNewLeaderAfterOldLeaderFailure): 3-5 voters; the leader shut down
  gracefully or killed (seeded); another leads; the old one restarted.
- `all-nodes-killed` (canRecoverAfterAllNodesKilled): 1-5 voters, all killed; a majority
  restarted (the lowest ids, as Kafka's test), a leader elected, then the others.
- `leader-partitioned` (canElectNewLeaderAfterOldLeaderPartitionedAway): 3-5 voters; the leader
  cut off; another leads; healed.
- `majority-reachable` (canMakeProgressIfMajorityIsReachable): 5 voters split 2/3 (a seeded
  pair); the three make progress with a leader of their own; healed.
- `back-to-back-leader-failures` (canMakeProgressAfterBackToBackLeaderFailures): 3-5 voters; the
  leader cut off; as soon as another leads, the first healed and the second cut off; a third
  leads; healed.
- fencer's own (`COMPOSED`): a fleet scenario's broker faults under the controller faults of
  `controller-failover`: `shutdown-during-failover` (rolling-restart), `offline-replicas-during-failover`
  (disk-failures). A bounced broker's stale requests across a failover are `chaos` (its crashes and
  replays, and the same controller faults).
- `overlapping-faults` (fencer's own, a Jepsen-style nemesis): 3-5 voters; 3-8 seeded kills,
  graceful shutdowns, cut-offs and pauses of seeded nodes (the leader half the time), each at a
  seeded time or as an election begins, overlapping up to a minority of the voters (see
  `_overlapping_faults`); then every fault ends and a leader is elected.
- `single-node-data-loss` (canRecoverFromSingleNodeCommittedDataLoss): 3-5 voters; a seeded node
  killed with its persistent state deleted; restarted once another node leads. Kafka's two
  invariants that this breaks on purpose are off (`RaftWatch.relaxed`).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import trio

from broker_sim.shell.context import FleetContext
from broker_sim.shell.quorum_faults import ControllerFaults

from .cluster import SimQuorum

POLL_S = 0.01
#: how many deposition times a step may take (an election, a restart's catching up)
STEP_BOUND = 8.0
#: the scripts' first fault, in simulated seconds after the fleet started (its brokers registered)
START_S = (3.0, 4.0)


class Stuck(Exception):
    pass


Script = Callable[["ScenarioFaults"], Awaitable[None]]


@dataclass(frozen=True)
class RaftScenario:
    name: str
    kafka: str  # RaftEventSimulationTest's method (empty: fencer's own)
    voters: tuple[int, int]  # the range drawn from (both included)
    script: Script
    relaxed: bool = False  # see `RaftWatch.relaxed`


class ScenarioFaults(ControllerFaults):
    """The fleet's controller-fault driver (its watcher and journal) playing a scenario's script."""

    def __init__(
        self, quorum: SimQuorum, scenario: RaftScenario, rng: random.Random, duration_s: float, poll_s: float
    ) -> None:
        super().__init__(quorum, (), duration_s, poll_s)
        self.sim = quorum
        self.scenario = scenario
        self.rng = rng
        self.stuck: list[str] = []

    async def _faults(self, ctx: FleetContext) -> None:
        await ctx.sleep_until(self.rng.uniform(*START_S))
        await self._wait_whole()
        try:
            await self.scenario.script(self)
            await self.caught_up()
        except Stuck as stuck:
            self.stuck.append(f"[sim-scenario-stuck] {self.scenario.name}: {stuck} (at {trio.current_time():.4f} s)")

    # ------------------------------------------------------------------ the scripts' steps
    def act(self, node: int, kind: str) -> None:
        assert self._ctx is not None
        self._ctx.recorder.controller_fault(node, kind, 0.0, self.leader)

    async def wait_leader(self, *, other_than: frozenset[int] = frozenset(), what: str = "a leader") -> int:
        """The newest epoch's leader, once there is one not in `other_than`."""
        bound = STEP_BOUND * self.sim.plan.timing.deposed_s
        with trio.move_on_after(bound):
            while True:
                found = self.sim.watch.leader()
                if found is not None and found[0] not in other_than:
                    return found[0]
                await trio.sleep(POLL_S)
        raise Stuck(f"no {what} within {bound:g} s")

    async def caught_up(self) -> None:
        """Every running node reaches the high watermark its leader had when the script ended
        (Kafka's `allReachedHighWatermark`)."""
        target = self.sim.watch.high_watermark
        bound = STEP_BOUND * self.sim.plan.timing.deposed_s
        with trio.move_on_after(bound):
            while True:
                behind = [
                    node
                    for node in self.sim.ids
                    if self.sim.nodes[node].running and self.sim.watch.high_watermark_of(node) < target
                ]
                if not behind:
                    return
                await trio.sleep(POLL_S)
        raise Stuck(f"nodes {behind} did not reach the high watermark {target} within {bound:g} s")

    async def pause_for(self, low: float, high: float) -> None:
        """A seeded wait, in fetch timeouts."""
        await trio.sleep(self.rng.uniform(low, high) * self.sim.plan.timing.fetch_timeout_s)

    async def fault(self, node: int, kind: str) -> None:
        """`kind` journalled on `node`, then applied to it: "kill", "shutdown", "wipe" and "restart"
        wait for the node; "cut", "heal", "pause" and "resume" take effect at once (no checkpoint)."""
        self.act(node, kind)
        sim = self.sim
        waited = {"kill": sim.kill, "shutdown": sim.shutdown, "wipe": sim.wipe, "restart": sim.restart}
        if kind in waited:
            await waited[kind](node)
        else:
            {"cut": sim.cut, "heal": sim.heal, "pause": sim.pause, "resume": sim.resume}[kind](node)

    def time_left(self) -> float:
        """Simulated seconds until the run ends."""
        assert self._ctx is not None
        return self.duration_s - self._ctx.now()

    async def election(self) -> None:
        """Until a node asks for (pre-)votes, for at most a fetch timeout (none may come)."""
        with trio.move_on_after(self.sim.plan.timing.fetch_timeout_s):
            while not self.sim.watch.electing():
                await trio.sleep(POLL_S)


# ---------------------------------------------------------------------- the scripts
async def _initial_election(f: ScenarioFaults) -> None:
    await f.wait_leader()


async def _leader_failure(f: ScenarioFaults) -> None:
    leader = await f.wait_leader()
    await f.fault(leader, "shutdown" if f.rng.random() < 0.5 else "kill")
    await f.wait_leader(other_than=frozenset({leader}), what=f"leader other than {leader}")
    await f.pause_for(0.5, 1.5)
    await f.fault(leader, "restart")


async def _all_nodes_killed(f: ScenarioFaults) -> None:
    await f.wait_leader()
    ids = f.sim.ids
    for node in ids:
        await f.fault(node, "kill")
    await f.pause_for(0.1, 0.5)
    majority = len(ids) // 2 + 1
    for node in ids[:majority]:
        await f.fault(node, "restart")
    await f.wait_leader(what="leader among the restarted majority")
    for node in ids[majority:]:
        await f.fault(node, "restart")


async def _leader_partitioned(f: ScenarioFaults) -> None:
    leader = await f.wait_leader()
    await f.fault(leader, "cut")
    await f.wait_leader(other_than=frozenset({leader}), what=f"leader other than the cut-off {leader}")
    await f.pause_for(0.5, 1.5)
    await f.fault(leader, "heal")


async def _majority_reachable(f: ScenarioFaults) -> None:
    await f.wait_leader()
    minority = sorted(f.rng.sample(f.sim.ids, len(f.sim.ids) // 2))
    for node in minority:
        f.act(node, "cut")
    f.sim.split(minority)
    await f.wait_leader(other_than=frozenset(minority), what="leader among the majority")
    await f.pause_for(1.0, 2.0)  # the majority goes on committing the brokers' changes
    for node in minority:
        await f.fault(node, "heal")


async def _back_to_back(f: ScenarioFaults) -> None:
    first = await f.wait_leader()
    await f.fault(first, "cut")
    second = await f.wait_leader(other_than=frozenset({first}), what=f"leader other than {first}")
    await f.fault(first, "heal")
    await f.fault(second, "cut")
    await f.wait_leader(other_than=frozenset({second}), what=f"leader other than {second}")
    await f.pause_for(0.5, 1.5)
    await f.fault(second, "heal")


async def _single_node_data_loss(f: ScenarioFaults) -> None:
    await f.wait_leader()
    node = f.rng.choice(f.sim.ids)
    await f.fault(node, "wipe")
    f.sim.watch.forget(node)
    await f.wait_leader(other_than=frozenset({node}), what=f"leader other than the wiped {node}")
    await f.pause_for(0.5, 1.5)
    await f.fault(node, "restart")


#: the faults of `overlapping-faults`, each with the action that ends it
NEMESIS = {"kill": "restart", "shutdown": "restart", "cut": "heal", "pause": "resume"}


async def _overlapping_faults(f: ScenarioFaults) -> None:
    """3 to 8 seeded faults (`NEMESIS`) on seeded nodes, at a seeded time or as soon as an election
    begins, none less than two deposition times before the run ends (a voter killed before its
    vote reached its log, a stale node healed as the leader dies); faulted nodes are kept a
    minority by ending the oldest fault first, with no wait (the healed node may still be behind
    when the next fault strikes). Then every fault ends."""
    await f.wait_leader()
    faulted: dict[int, str] = {}  # node -> its fault, oldest first
    for _ in range(f.rng.randint(3, 8)):
        if f.rng.random() < 0.4:
            await f.election()
            await trio.sleep(f.rng.uniform(0.0, 0.02))
        else:
            await f.pause_for(0.0, 1.0)
        if f.time_left() < 2 * f.sim.plan.timing.deposed_s:
            break  # what is left of the run is for ending the faults and electing a leader
        if len(faulted) >= len(f.sim.ids) // 2:
            oldest = next(iter(faulted))
            await f.fault(oldest, NEMESIS[faulted.pop(oldest)])
        leader = f.sim.watch.leader()
        healthy = [node for node in f.sim.ids if node not in faulted]
        node = leader[0] if leader and leader[0] in healthy and f.rng.random() < 0.5 else f.rng.choice(healthy)
        kind = f.rng.choice(sorted(NEMESIS))
        faulted[node] = kind
        await f.fault(node, kind)
    for node in list(faulted):
        await f.fault(node, NEMESIS[faulted.pop(node)])
    await f.wait_leader(what="leader once every fault ended")


RAFT_SCENARIOS = {
    scenario.name: scenario
    for scenario in (
        RaftScenario("initial-election", "canElectInitialLeader", (1, 5), _initial_election),
        RaftScenario("leader-failure", "canElectNewLeaderAfterOldLeaderFailure", (3, 5), _leader_failure),
        RaftScenario("all-nodes-killed", "canRecoverAfterAllNodesKilled", (1, 5), _all_nodes_killed),
        RaftScenario(
            "leader-partitioned", "canElectNewLeaderAfterOldLeaderPartitionedAway", (3, 5), _leader_partitioned
        ),
        RaftScenario("majority-reachable", "canMakeProgressIfMajorityIsReachable", (5, 5), _majority_reachable),
        RaftScenario(
            "back-to-back-leader-failures", "canMakeProgressAfterBackToBackLeaderFailures", (3, 5), _back_to_back
        ),
        RaftScenario(
            "single-node-data-loss",
            "canRecoverFromSingleNodeCommittedDataLoss",
            (3, 5),
            _single_node_data_loss,
            relaxed=True,
        ),
        RaftScenario("overlapping-faults", "", (3, 5), _overlapping_faults),
    )
}

#: fencer's own scenarios: a fleet scenario's broker faults under the controller faults of
#: `controller-failover` (the fleet's seeded kills, pauses and cut-offs of the quorum's nodes)
COMPOSED = {
    # brokers shutting down one at a time (KIP-841: a shutting-down replica joins no ISR) while the
    # controller fails over: a shutdown's leadership moves and its answer span two controllers
    "shutdown-during-failover": "rolling-restart",
    # every broker loses a log dir once (AlterReplicaState OFFLINE: the replica leaves the ISR and
    # leadership) while the controller fails over
    "offline-replicas-during-failover": "disk-failures",
}
