"""The fleet's own controller quorum (`--quorum N --quorum-data-dir DIR`): N controller
processes on this machine, a proxy for every ordered pair of them, and what the fleet does to them.

Rules:
- Node i (1..N) runs `python -m MODULE` (`controller`, or a test copy with planted bugs, given
  extra arguments) with its own data dir DIR/node-i (stderr appended to DIR/node-i.log, across
  restarts), `--node-id i`, one cluster id, the run's session timeout and the quorum's two
  timeouts. Its `--listen` address is its own entry of its `--controller-quorum-voters`; every
  other entry j names the proxy P(i->j), through which node i alone reaches node j. So cutting a
  node off from its peers is cutting the 2(N-1) proxies into and out of it (`proxy`), without root.
- The brokers reach every node at its real address, not through a proxy: a node cut off from its
  peers still hears the brokers, which is the case that tests fencing (a cut-off leader must not
  acknowledge anything its epoch cannot commit), and a node's LeaderAndIsr reach the brokers
  directly anyway.
- `kill` (SIGKILL, `quorum_node`); `restart` starts it again on the same port and data dir;
  `pause` (SIGSTOP) and `resume` (SIGCONT); `cut` and `heal` its proxies. `stop`, at the end: every
  node at once (each as `quorum_node` stops one); the proxies close last.
- `describe(node)`: DescribeQuorum on a connection kept per node (reopened after any failure),
  each answer within `quorum_connection.PROBE_S` (`Probe.ask` sends any other request of the
  fleet's own so); `round()` asks every node that runs and is not paused at once and returns who
  leads (`model.quorum.newest_leader`), which nodes answered, and every node that answered as a
  leader.
- Each node's process: `quorum_node`; its port: `quorum_plan`; its connection for DescribeQuorum
  and the fleet's other requests: `quorum_connection`.
- Ports and timings aside, nothing here chooses: the fleet's fault schedule decides what happens
  (`model.schedule.controller_fault_schedule`, applied by `quorum_faults`).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import trio

from broker_sim.model.quorum import LeaderView, newest_leader

from .proxy import Address, Proxy
from .quorum_connection import Probe
from .quorum_node import Node, QuorumError
from .quorum_plan import HOST, QuorumPlan, pick_ports

#: the names the fleet's runs, the simulation, the demo and the benchmarks import from here
__all__ = ["Probe", "Quorum", "QuorumError", "QuorumPlan", "Round", "open_quorum", "pick_ports"]

log = logging.getLogger("fencer.broker_sim.quorum")
LEADER_WAIT_S = 30.0


@dataclass
class Round:
    """One round of DescribeQuorum over the nodes: who leads, who answered at all, and every node
    that answered as a leader (a deposed one may, until it learns of its successor or resigns)."""

    leader: LeaderView | None
    answered: frozenset[int]
    claims: dict[int, LeaderView] = field(default_factory=dict)


class Quorum:
    def __init__(self, plan: QuorumPlan, ports: list[int] | None = None) -> None:
        self.plan = plan
        ports = ports or pick_ports(plan.nodes)
        self.ids = list(range(1, plan.nodes + 1))
        self.addresses: dict[int, Address] = {node: (HOST, port) for node, port in zip(self.ids, ports, strict=True)}
        self.proxies: dict[tuple[int, int], Proxy] = {
            (source, target): Proxy(self.addresses[target], f"node {source} -> node {target}")
            for source in self.ids
            for target in self.ids
            if source != target
        }
        self.nodes: dict[int, Node] = {}
        #: the fleet's client context when the nodes serve TLS (the probes' connections)
        self.client_tls = plan.tls.client_context() if plan.tls is not None else None
        self.probes = {node: Probe(address, self.client_tls) for node, address in self.addresses.items()}
        self.failures: list[str] = []
        self._nursery: trio.Nursery | None = None

    @property
    def controllers(self) -> tuple[Address, ...]:
        """The nodes' real addresses, by id: the brokers' `--controller` list."""
        return tuple(self.addresses[node] for node in self.ids)

    def node_of(self, peer: str) -> int | None:
        """The node at HOST:PORT (None: not one of ours)."""
        for node, (host, port) in self.addresses.items():
            if peer == f"{host}:{port}":
                return node
        return None

    def voters(self, node: int) -> str:
        """Node `node`'s --controller-quorum-voters: itself at its address, the others through its proxies."""
        entries = []
        for other in self.ids:
            host, port = self.addresses[node] if other == node else self.proxies[(node, other)].address
            entries.append(f"{other}@{host}:{port}")
        return ",".join(entries)

    def command(self, node: int) -> list[str]:
        plan, (host, port) = self.plan, self.addresses[node]
        return [
            sys.executable,
            "-m",
            plan.module,
            "--data-dir",
            str(plan.node_dir(node)),
            "--listen",
            f"{host}:{port}",
            "--node-id",
            str(node),
            "--controller-quorum-voters",
            self.voters(node),
            "--cluster-id",
            plan.cluster_id,
            "--session-timeout-ms",
            str(plan.session_timeout_ms),
            "--controller-quorum-election-timeout-ms",
            str(round(plan.timing.election_timeout_s * 1000)),
            "--controller-quorum-fetch-timeout-ms",
            str(round(plan.timing.fetch_timeout_s * 1000)),
            *self._tls_args(),
            *plan.extra_args,
        ]

    def _tls_args(self) -> list[str]:
        tls = self.plan.tls
        if tls is None:  # the fleet's own quorum on loopback: no client certificates to prove a voter
            return ["--allow-unauthenticated-voters"]
        return ["--tls-cert", str(tls.cert), "--tls-key", str(tls.key), "--tls-ca", str(tls.ca)]

    async def start(self, nursery: trio.Nursery) -> None:
        """Start the proxies, then every node at once, then wait for a leader (`LEADER_WAIT_S`)."""
        self._nursery = nursery
        self.plan.data_dir.mkdir(parents=True, exist_ok=True)
        for proxy in self.proxies.values():
            await nursery.start(proxy.serve)
        self.nodes = {
            node: Node(node, address, self.plan.node_dir(node), self.command(node))
            for node, address in self.addresses.items()
        }
        failed: list[QuorumError] = []

        async def start(node: Node) -> None:
            try:
                await node.start(nursery, self.failures)
            except QuorumError as error:
                failed.append(error)

        async with trio.open_nursery() as starting:
            for node in self.nodes.values():
                starting.start_soon(start, node)
        if failed:
            raise failed[0]
        await self._elected()

    async def _elected(self) -> None:
        """Wait for a leader (`LEADER_WAIT_S`), else `QuorumError`."""
        with trio.move_on_after(LEADER_WAIT_S):
            while (await self.round()).leader is None:
                await trio.sleep(0.1)
            return
        raise QuorumError(
            f"the quorum elected no leader within {LEADER_WAIT_S:g}s (see {self.plan.data_dir}/node-*.log)"
        )

    async def round(self) -> Round:
        """DescribeQuorum to every node that runs and is not paused, at once."""
        answers: dict[int, tuple[bool, LeaderView | None]] = {}

        async def ask(node: int) -> None:
            answers[node] = await self.probes[node].describe()

        async with trio.open_nursery() as nursery:
            for node in self.ids:
                if node in self.nodes and self.nodes[node].running and not self.nodes[node].paused:
                    nursery.start_soon(ask, node)
        leader = newest_leader([view for _answered, view in answers.values()])
        claims = {node: view for node, (_answered, view) in sorted(answers.items()) if view is not None}
        return Round(leader, frozenset(node for node, (answered, _view) in answers.items() if answered), claims)

    # ------------------------------------------------------------------ faults
    async def kill(self, node: int) -> None:
        await self.nodes[node].kill()
        await self.probes[node].close()

    async def restart(self, node: int) -> None:
        assert self._nursery is not None
        target = self.nodes[node]
        if target.running:
            return
        try:
            await target.start(self._nursery, self.failures)
        except QuorumError as error:
            self.failures.append(str(error))

    def pause(self, node: int) -> None:
        self.nodes[node].signal(signal.SIGSTOP)
        self.nodes[node].paused = True

    def resume(self, node: int) -> None:
        self.nodes[node].signal(signal.SIGCONT)
        self.nodes[node].paused = False

    def cut(self, node: int) -> None:
        """Every proxy into and out of `node` drops its connections and black-holes new ones."""
        self.nodes[node].cut = True
        for (source, target), proxy in self.proxies.items():
            if node in (source, target):
                proxy.cut()

    def heal(self, node: int) -> None:
        self.nodes[node].cut = False
        for (source, target), proxy in self.proxies.items():
            if node in (source, target) and not (self.nodes[source].cut or self.nodes[target].cut):
                proxy.heal()

    def whole(self, answered: frozenset[int]) -> bool:
        """Every node runs, unpaused and connected, and answered the last round."""
        return all(
            node.running and not node.paused and not node.cut and node.node_id in answered
            for node in self.nodes.values()
        )

    async def stop(self) -> None:
        """Every node stopped (see the module rules), then the probes closed."""
        async with trio.open_nursery() as nursery:
            for node in self.nodes.values():
                nursery.start_soon(node.stop, self.failures)
        for probe in self.probes.values():
            await probe.close()


@contextlib.asynccontextmanager
async def open_quorum(plan: QuorumPlan) -> AsyncIterator[Quorum]:
    """A started quorum with a leader; stopped (and its proxies closed) on the way out, whatever happens.
    Raises `QuorumError` (outside any nursery: plain, not in an exception group) when it cannot start."""
    quorum = Quorum(plan)
    failed: QuorumError | None = None
    async with trio.open_nursery() as nursery:
        try:
            try:
                await quorum.start(nursery)
            except QuorumError as error:
                failed = error
            else:
                yield quorum
        finally:
            with trio.CancelScope(shield=True):
                await quorum.stop()
            nursery.cancel_scope.cancel()
    if failed is not None:
        raise failed
