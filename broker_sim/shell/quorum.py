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
- Ports: each node's port is chosen below the kernel's ephemeral range
  (`/proc/sys/net/ipv4/ip_local_port_range`), so that no port-0 listener (a broker's, a proxy's)
  and no outgoing connection can take a killed node's port before it restarts there.
- A node has started when it prints `listening on HOST:PORT` (within `START_S`); its stdout is
  read to its end after that, so that it never blocks on a full pipe. A node that exits without
  the fleet killing or stopping it is a failure of the run (`failures`, with its exit status and
  its log), as is one that does not start, or does not stop within `STOP_S` of SIGTERM or exits
  non-zero on it.
- `kill` (SIGKILL) waits for the process to be gone; `restart` starts it again on the same port
  and data dir; `pause` (SIGSTOP) and `resume` (SIGCONT); `cut` and `heal` its proxies. `stop`, at
  the end: SIGCONT to a paused node first, then SIGTERM to every node at once, SIGKILL past
  `STOP_S`; the proxies close last.
- `describe(node)`: DescribeQuorum on a connection kept per node (reopened after any failure),
  each answer within `PROBE_S` (`Probe.ask` sends any other request of the fleet's own so);
  `round()` asks every node that runs and is not paused at once and returns who leads
  (`model.quorum.newest_leader`), which nodes answered, and every node that answered as a leader.
- Ports and timings aside, nothing here chooses: the fleet's fault schedule decides what happens
  (`model.schedule.controller_fault_schedule`, applied by `quorum_faults`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import re
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import trio

from broker_sim.model.quorum import (
    DESCRIBE_QUORUM_VERSION,
    LeaderView,
    QuorumTiming,
    describe_quorum_request,
    leader_view,
    newest_leader,
)
from protocol.errors import DecodeError
from protocol.framing import FrameBuffer
from protocol.messages.describe_quorum import DescribeQuorumResponse
from protocol.registry import decode_response, encode_request
from protocol.spec import Data

from .proxy import Address, Proxy
from .tls import FleetTls, open_stream

log = logging.getLogger("fencer.broker_sim.quorum")
START_S = 30.0
STOP_S = 20.0
PROBE_S = 0.5
LEADER_WAIT_S = 30.0
HOST = "127.0.0.1"
LISTENING = re.compile(rb"listening on \S+\n")
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_PORT = 10000


class QuorumError(Exception):
    """The quorum could not be started (the message is one line, naming the node's log)."""


@dataclass(frozen=True)
class QuorumPlan:
    nodes: int
    data_dir: Path
    cluster_id: str
    session_timeout_ms: int
    timing: QuorumTiming = field(default_factory=QuorumTiming)
    module: str = "controller"
    extra_args: tuple[str, ...] = ()
    #: the fleet's --tls-*: each node serves TLS with the fleet's certificate, CA and all
    tls: FleetTls | None = None

    def node_dir(self, node: int) -> Path:
        return self.data_dir / f"node-{node}"

    @property
    def node_dirs(self) -> list[Path]:
        return [self.node_dir(node) for node in range(1, self.nodes + 1)]


def pick_ports(count: int) -> list[int]:
    """`count` free ports below the ephemeral range (see the module rules). Not a simulated choice:
    two runs on one machine must not draw the same ports, whatever their seeds."""
    try:
        lowest_ephemeral = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        lowest_ephemeral = 32768
    chooser = random.SystemRandom()
    ports: list[int] = []
    while len(ports) < count:
        port = chooser.randrange(LOWEST_PORT, max(LOWEST_PORT + 1000, lowest_ephemeral))
        with socket.socket() as probe:
            try:
                probe.bind((HOST, port))
            except OSError:
                continue
        if port not in ports:
            ports.append(port)
    return ports


class Node:
    """One controller process of the quorum, across its restarts."""

    def __init__(self, node_id: int, address: Address, data_dir: Path, command: list[str]) -> None:
        self.node_id = node_id
        self.address = address
        self.data_dir = data_dir
        self.log_path = data_dir.with_name(f"{data_dir.name}.log")
        self.command = command
        self.process: trio.Process | None = None
        self.paused = False
        self.cut = False
        self.starts = 0
        self._ours = False  # the fleet ended the current process (kill, stop): its exit is expected

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    @property
    def name(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"

    async def start(self, nursery: trio.Nursery, failures: list[str]) -> None:
        with open(self.log_path, "ab") as log_file:
            process = await trio.lowlevel.open_process(
                self.command,
                stdout=subprocess.PIPE,
                stderr=log_file,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        self.process, self._ours, self.paused = process, False, False
        self.starts += 1
        assert process.stdout is not None
        seen = b""
        with trio.move_on_after(START_S):
            while not LISTENING.search(seen):
                chunk = await process.stdout.receive_some(4096)
                if not chunk:
                    break
                seen += chunk
        if not LISTENING.search(seen):
            self._ours = True
            with contextlib.suppress(OSError):
                process.kill()
            await process.wait()
            raise QuorumError(f"controller node {self.node_id} did not start (see {self.log_path}): {self.tail()}")
        nursery.start_soon(self._drain, process)
        nursery.start_soon(self._watch, process, failures)

    async def _drain(self, process: trio.Process) -> None:
        assert process.stdout is not None
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            while await process.stdout.receive_some(4096):
                pass

    async def _watch(self, process: trio.Process, failures: list[str]) -> None:
        code = await process.wait()
        if not self._ours and process is self.process:
            failures.append(
                f"controller node {self.node_id} exited by itself with status {code} (see {self.log_path}): "
                f"{self.tail()}"
            )

    def tail(self) -> str:
        """The last line of the node's log, for a one-line error."""
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "no log"
        return lines[-1] if lines else "nothing logged"

    def signal(self, signum: int) -> None:
        if self.running:
            assert self.process is not None
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signum)

    async def kill(self) -> None:
        if self.process is None:
            return
        self._ours = True
        self.signal(signal.SIGKILL)
        await self.process.wait()
        self.paused = False

    async def stop(self, failures: list[str]) -> None:
        """SIGCONT if paused, SIGTERM, SIGKILL past `STOP_S` (see the module rules)."""
        process = self.process
        if process is None or process.returncode is not None:
            return
        self._ours = True
        if self.paused:
            self.signal(signal.SIGCONT)
            self.paused = False
        self.signal(signal.SIGTERM)
        with trio.move_on_after(STOP_S):
            code = await process.wait()
            if code != 0:
                failures.append(f"controller node {self.node_id} exited with status {code} on SIGTERM: {self.tail()}")
            return
        failures.append(f"controller node {self.node_id} did not stop within {STOP_S:g}s of SIGTERM: killed")
        self.signal(signal.SIGKILL)
        await process.wait()


class Probe:
    """DescribeQuorum (or another request of the fleet's own) to one node on a connection kept open
    (see the module rules)."""

    def __init__(self, address: Address, tls: ssl.SSLContext | None = None) -> None:
        self.address = address
        self.tls = tls
        self._stream: trio.abc.Stream | None = None
        self._frames = FrameBuffer()
        self._correlation = 0
        self._asking = trio.Lock()

    async def describe(self) -> tuple[bool, LeaderView | None]:
        """(whether the node answered, the leader's view if it answered as the leader)."""
        response = await self.ask(describe_quorum_request(), DESCRIBE_QUORUM_VERSION)
        if not isinstance(response, DescribeQuorumResponse):
            await self.close()
            return False, None
        return True, leader_view(response)

    async def ask(self, body: Data, version: int) -> object | None:
        """`body`'s answer within `PROBE_S`; None (and the connection closed) when none came."""
        try:
            with trio.fail_after(PROBE_S):
                async with self._asking:  # the poller and the prober share the connection: one at a time
                    response = await self._exchange(body, version)
        except (OSError, trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError, DecodeError):
            await self.close()
            return None

        return response

    async def _exchange(self, body: Data, version: int) -> object:
        if self._stream is None:
            self._stream = await open_stream(*self.address, self.tls)
            self._frames = FrameBuffer()
        self._correlation += 1
        frame = encode_request(body, version, self._correlation, "fencer-fleet")
        stream = self._stream
        await stream.send_all(frame)
        while (payload := self._frames.next_frame()) is None:
            data = await stream.receive_some(65536)  # `close` may drop self._stream meanwhile
            if not data:
                raise trio.BrokenResourceError("the node closed the connection")
            self._frames.receive_data(data)
        return decode_response(payload, body.API.key, version)[1]

    async def close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            await trio.aclose_forcefully(stream)


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
