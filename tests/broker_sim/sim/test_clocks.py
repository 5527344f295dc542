"""Each simulated node's machine has its own monotonic clock (brokers' sessions run on it): counted
from a seeded boot before the run, so no two nodes' readings agree; the wall clock is shared."""

from __future__ import annotations

import random
from pathlib import Path

import trio

from broker_sim.shell.quorum_plan import QuorumPlan
from broker_sim.sim.cluster import EPOCH_NS, NodeRuntime, SimQuorum
from broker_sim.sim.network import SimNetwork


def quorum(tmp_path: Path, seed: int) -> SimQuorum:
    plan = QuorumPlan(nodes=3, data_dir=tmp_path, cluster_id="c2ltdWxhdGVkLWNsdXN0ZXI", session_timeout_ms=9000)
    return SimQuorum(plan, SimNetwork(random.Random(seed)), seed)


async def test_every_node_counts_its_monotonic_clock_from_its_own_boot(
    tmp_path: Path, autojump_clock: trio.abc.Clock
) -> None:
    boots = {node: n.boot_ns for node, n in quorum(tmp_path, 7).nodes.items()}
    assert len(set(boots.values())) == 3 and min(boots.values()) >= 1_000_000_000
    assert boots == {node: n.boot_ns for node, n in quorum(tmp_path, 7).nodes.items()}  # the seed's
    assert boots != {node: n.boot_ns for node, n in quorum(tmp_path, 8).nodes.items()}
    network = SimNetwork(random.Random(0))
    runtimes = [NodeRuntime(network.host(f"h{node}"), random.Random(0), boot) for node, boot in boots.items()]
    await trio.sleep(1.5)
    now_ns = int(trio.current_time() * 1e9)
    assert [r.monotonic_ns() for r in runtimes] == [now_ns + boot for boot in boots.values()]
    assert {r.wall_ns() for r in runtimes} == {EPOCH_NS + now_ns}
