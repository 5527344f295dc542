"""Scenarios on a quiet simulated network (no random faults), with one fault placed by hand:
check-quorum, pre-vote, a leader's crash, a leader cut off with writes in flight."""

from __future__ import annotations

from controller.raft import NodeId
from controller.raft.state import Follower

from .sim import Simulation
from .simnode import TIMING, SimNode
from .test_simulation import QUIET

FETCH_MS = TIMING["fetch_timeout_ms"]
ELECTION_MS = TIMING["election_timeout_ms"]


def quiet(seed: int = 1, voters: int = 3) -> Simulation:
    sim = Simulation(seed, voters, chaos_ms=100_000, faults=QUIET)
    sim.start()
    sim.run_until(600)
    return sim


def the_leader(sim: Simulation) -> SimNode:
    [leader] = sim.leaders()
    return leader


def isolate(sim: Simulation, node_id: NodeId) -> None:
    sim.cut = {frozenset((node_id, other)) for other in sim.nodes if other != node_id}


def test_a_cut_off_leader_resigns_within_one_and_a_half_fetch_timeouts() -> None:
    for seed in range(5):
        sim = quiet(seed)
        leader = the_leader(sim)
        assert leader.core is not None
        epoch, cut_at = leader.core.epoch, sim.now
        isolate(sim, leader.node_id)
        sim.run_until(cut_at + 2 * FETCH_MS)
        [stopped_at] = [at for at, node, what, e in sim.history if (node, what, e) == (leader.node_id, "stop", epoch)]
        assert FETCH_MS < stopped_at - cut_at <= 1.5 * FETCH_MS
        [successor] = sim.leaders()
        assert successor is not leader and successor.core is not None and successor.core.epoch > epoch
        sim.cut = set()
        sim.run_until(sim.now + 300)
        assert isinstance(leader.core.state, Follower) and leader.core.state.leader_id == successor.node_id


def test_an_isolated_voter_does_not_bump_the_epoch() -> None:
    for seed in range(5):
        sim = quiet(seed)
        leader = the_leader(sim)
        assert leader.core is not None
        epoch = leader.core.epoch
        follower = next(node for node in sim.nodes.values() if node is not leader)
        isolate(sim, follower.node_id)
        sim.run_until(sim.now + 10 * ELECTION_MS)  # many election timeouts, all its pre-votes lost
        assert follower.core is not None and follower.core.epoch == epoch
        assert follower.election is not None and follower.election.epoch == epoch
        sim.cut = set()
        sim.run_until(sim.now + FETCH_MS)
        assert the_leader(sim) is leader and leader.core.epoch == epoch  # nobody was disturbed
        assert isinstance(follower.core.state, Follower) and follower.core.state.leader_id == leader.node_id
        assert sim.stats["elections won"] == 1


def test_a_crashed_leader_is_replaced_promptly() -> None:
    for seed in range(5):
        sim = quiet(seed, voters=5)
        leader = the_leader(sim)
        crashed_at = sim.now
        sim.crash(leader)
        # a fetch timeout to notice, then pre-votes and votes: the followers time out together, so
        # the first round often splits; each further round costs one election timeout at most
        sim.run_until(crashed_at + FETCH_MS + 4 * ELECTION_MS)
        [successor] = sim.leaders()
        assert successor is not leader
        sim.restart(leader)
        sim.run_until(sim.now + 300)
        assert leader.core is not None and isinstance(leader.core.state, Follower)


def test_what_a_cut_off_leader_appends_never_commits() -> None:
    sim = quiet(2)
    leader = the_leader(sim)
    isolate(sim, leader.node_id)
    committed_before = len(sim.checker.committed)
    orphans = [sim.client_append(leader) for _ in range(5)]
    sim.run_until(sim.now + 2 * FETCH_MS)
    sim.cut = set()
    sim.run_until(sim.now + 500)
    committed = sim.checker.committed
    assert len(committed) > committed_before
    payloads = {payload for _, payload in committed}
    for batch in orphans:
        assert batch is not None and isinstance(batch.payload, tuple)
        assert not payloads & set(batch.payload)
    assert sim.stats["truncations"] >= 1
    # the old leader now holds the new leader's entries where its orphans were (it may trail by
    # the appends still being replicated)
    successor = the_leader(sim).log
    assert leader.log.end > max(batch.last_offset for batch in orphans if batch is not None)
    assert all(leader.log.entry(offset) == successor.entry(offset) for offset in range(leader.log.end))
