"""The fleet's own quorum, wired (no controller started): node i names itself at its own address and
every other node j through the proxy P(i->j); cutting a node cuts exactly the 2(N-1) proxies into
and out of it, and a heal leaves a proxy cut while its other end is cut too; the controllers'
command line; ports below the ephemeral range."""

from __future__ import annotations

from pathlib import Path

import trio

from broker_sim.model.quorum import QuorumTiming
from broker_sim.shell.quorum import Quorum
from broker_sim.shell.quorum_node import Node
from broker_sim.shell.quorum_plan import QuorumPlan, pick_ports


def plan(tmp_path: Path, nodes: int = 3) -> QuorumPlan:
    return QuorumPlan(nodes, tmp_path, "ajhwDF-zT-GJZywZouHoKA", 3000, QuorumTiming(0.5, 1.0), "m", ("--bug", "x"))


async def wired(nursery: trio.Nursery, tmp_path: Path, nodes: int = 3) -> Quorum:
    quorum = Quorum(plan(tmp_path, nodes), ports=[20000 + node for node in range(1, nodes + 1)])
    for proxy in quorum.proxies.values():
        await nursery.start(proxy.serve)
    quorum.nodes = {node: Node(node, quorum.addresses[node], tmp_path / f"node-{node}", []) for node in quorum.ids}
    return quorum


async def test_each_node_reaches_each_other_through_its_own_proxy(nursery: trio.Nursery, tmp_path: Path) -> None:
    quorum = await wired(nursery, tmp_path)
    assert quorum.controllers == (("127.0.0.1", 20001), ("127.0.0.1", 20002), ("127.0.0.1", 20003))
    assert len(quorum.proxies) == 6
    for node in quorum.ids:
        entries = dict(entry.split("@") for entry in quorum.voters(node).split(","))
        assert entries[str(node)] == f"127.0.0.1:{20000 + node}"
        for other in quorum.ids:
            if other != node:
                proxy = quorum.proxies[(node, other)]
                assert (
                    entries[str(other)] == f"127.0.0.1:{proxy.address[1]}" and proxy.upstream == quorum.addresses[other]
                )
    assert len({proxy.address for proxy in quorum.proxies.values()}) == 6
    assert quorum.node_of("127.0.0.1:20002") == 2 and quorum.node_of("127.0.0.1:9093") is None


async def test_a_cut_takes_every_proxy_into_and_out_of_the_node_and_a_heal_gives_them_back(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    quorum = await wired(nursery, tmp_path, nodes=5)
    quorum.cut(2)
    cut = {pair for pair, proxy in quorum.proxies.items() if proxy.is_cut}
    assert cut == {pair for pair in quorum.proxies if 2 in pair} and len(cut) == 8
    quorum.cut(4)
    quorum.heal(2)
    assert {pair for pair, proxy in quorum.proxies.items() if proxy.is_cut} == {
        pair for pair in quorum.proxies if 4 in pair
    }  # (2, 4) and (4, 2) stay cut: node 4 still is
    quorum.heal(4)
    assert not any(proxy.is_cut for proxy in quorum.proxies.values())


async def test_the_command_line_of_a_node(nursery: trio.Nursery, tmp_path: Path) -> None:
    quorum = await wired(nursery, tmp_path)
    command = quorum.command(2)
    assert command[1:3] == ["-m", "m"] and command[-2:] == ["--bug", "x"]  # the planted bug's arguments last
    # a plaintext quorum on loopback says so: without client certificates no voter can be proven
    assert command[-3] == "--allow-unauthenticated-voters"
    options = dict(zip(command[3:-3:2], command[4:-3:2], strict=True))
    assert options == {
        "--data-dir": str(tmp_path / "node-2"),
        "--listen": "127.0.0.1:20002",
        "--node-id": "2",
        "--controller-quorum-voters": quorum.voters(2),
        "--cluster-id": "ajhwDF-zT-GJZywZouHoKA",
        "--session-timeout-ms": "3000",
        "--controller-quorum-election-timeout-ms": "500",
        "--controller-quorum-fetch-timeout-ms": "1000",
    }


def test_ports_are_free_distinct_and_below_the_ephemeral_range() -> None:
    lowest = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = pick_ports(5)
    assert len(set(ports)) == 5 and all(10000 <= port < lowest for port in ports)
