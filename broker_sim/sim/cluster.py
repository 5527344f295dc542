"""A controller quorum inside the simulation: every node the real daemon (`controller.server.daemon`:
connections, the writer, the Raft driver, the control channel, the engine over its metadata log),
in this process, on the simulated network and clock.

Rules:
- Node i is host `controller-i` of the network, listening on `PORT`; its voters are the other
  nodes' addresses. Its runtime (`NodeRuntime`) is its network view, its clocks and its disk. The
  wall clock is the simulation's, which every node shares (the checker compares the writers'
  batch timestamps, `check/quorum_rules.py`, as when the fleet runs a quorum on one host); the
  monotonic clock (brokers' sessions) counts from the node's machine's boot, a seeded time before
  the run that a crash of the machine draws anew (a clock that starts again near 0), so that no two
  nodes' readings, nor one node's across a reboot, compare. Blocking work runs inline (one
  scheduler), then the node waits out the disk's latency, as an fsync would (shielded: a started
  write finishes); the daemon fsyncs as it does in production, and the disk (`disk`) notes what
  each fsync made durable.
- The fleet's interface to a quorum (`broker_sim.shell.quorum.Quorum`: `round`, `whole`, `kill`,
  `restart`, `pause`, `resume`, `cut`, `heal`, `stop`), so that the fleet's controller faults
  (`quorum_faults`) and probes run unchanged:
  - `kill`: the node's tasks are cancelled and every connection to or from it is reset: a crash of
    its process (what it wrote stays), or, one kill in two as the seed draws, of its machine (what
    it did not fsync is lost or torn: `disk`). One kill in four begins with its disk failing
    (every fsync EIO or ENOSPC): the daemon's log failure is fatal, so it exits on its next fsync
    (as the process would, with status 1); if it wrote nothing within `DISK_ERROR_S`, the kill
    goes on as any. `restart` gives the node a working disk and loads the engine from the data dir
    again, as the process would.
  - `pause` (SIGSTOP): the node is cut from every host, its bytes held both ways until `resume`;
    its own timers run on (a simplification: a stopped process's do not).
  - `cut`: the node cannot reach the other nodes, nor they it (the brokers still reach it).
- `shutdown` (SIGTERM) drains the node first; `wipe` kills it and deletes its persistent state;
  `split` cuts a minority of the nodes from the rest (Kafka's simulation scenarios, `scenarios`).
- Every node starts with the run's `NodeSettings` (the daemon's log and operation options), which a
  seed draws (`NodeSettings.drawn`): Kafka's defaults, under which a run's few KB of log never
  snapshot, roll or expire; or a small log, which snapshots every few KB, rolls segments and
  deletes the oldest, so that restarts load snapshots and followers catch up by FetchSnapshot
  under the faults. Independently, one seed in three draws a small record cap
  (`--max-records-per-operation`, what a topic's creation takes, or one more): a broker's fencing, controlled
  shutdown or AlterPartition then spans several batches, written as one metadata transaction
  (KIP-868), which kills and failovers may cut (the fleet's admin creates its topics one request
  each once a request of several is refused POLICY_VIOLATION). And independently, half the seeds
  run the controller with defaults of their own for a topic asked with -1 (`--num-partitions` 2-4,
  `--default-replication-factor` 2-3; Kafka's are 1 and 1), which the fleet's admin knows
  (`FleetConfig.controller_defaults`), so that a topic placed with -1 is judged by its shape.
- Every random choice (each engine's and each Raft driver's) comes from the run's seed.
"""

from __future__ import annotations

import errno
import logging
import os
import random
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import trio

from broker_sim.shell.proxy import Address
from broker_sim.shell.quorum import Probe, Quorum, QuorumPlan
from controller import runtime as controller_runtime
from controller.engine import DEFAULT_SNAPSHOT_BYTES, ControllerEngine
from controller.log.model import LogError
from controller.log.retention import DEFAULT_RETENTION_BYTES
from controller.log.store import DEFAULT_SEGMENT_BYTES
from controller.server.daemon import Daemon, DaemonOptions
from controller.server.quorum_config import QuorumConfig, Voter
from controller.state.controller_state import ControllerConfig
from controller.stopping import find_failure

from .disk import SimDisk
from .network import HostNetwork, SimNetwork
from .raft_watch import RaftWatch

log = logging.getLogger("fencer.sim.cluster")
T = TypeVar("T")
PORT = 9093
#: the share of kills that crash the node's machine, not only its process (see the rules)
POWER_LOSS = 0.5
#: the share of kills that begin with the node's disk failing, and how long the daemon has to meet it
DISK_ERRORS = 0.25
DISK_ERROR_S = 2.0
#: the wall clock at the simulation's time 0 (2026-01-01T00:00:00Z): record timestamps look real
EPOCH_NS = 1_767_225_600 * 1_000_000_000


class NodeRuntime:
    """One node's runtime (`controller.runtime.Runtime`) in the simulation."""

    def __init__(
        self,
        net: HostNetwork,
        rng: random.Random,
        boot_ns: int = 0,
        disk_s: tuple[float, float] = (0, 0),
        disk: SimDisk | None = None,
    ):
        self.net = net
        self.rng = rng
        self.boot_ns = boot_ns
        self.disk_s = disk_s
        self.disk = disk

    async def open_tcp_stream(self, host: str, port: int) -> trio.abc.Stream:
        return await self.net.open_tcp_stream(host, port)

    async def open_tcp_listeners(self, port: int, host: str) -> Sequence[trio.abc.Listener[Any]]:
        return await self.net.open_tcp_listeners(port, host)

    async def run_blocking(self, fn: Callable[[], T], now: bool) -> T:
        result = fn()
        low, high = self.disk_s
        with trio.CancelScope(shield=True):
            await trio.sleep(self.rng.uniform(low, high) if high > 0 else 0)
        return result

    def fsync(self, fd: int) -> None:
        if self.disk is not None:
            self.disk.fsync(fd)

    def replace(self, source: Path, target: Path) -> None:
        os.replace(source, target)
        if self.disk is not None:
            self.disk.replaced(source, target)

    def wall_ns(self) -> int:
        return EPOCH_NS + int(trio.current_time() * 1e9)

    def monotonic_ns(self) -> int:
        return int(trio.current_time() * 1e9) + self.boot_ns


@dataclass(frozen=True)
class NodeSettings:
    """The daemon's options every node of a run starts with (`--snapshot-bytes`, `--segment-bytes`,
    `--metadata-retention-bytes`, `--max-records-per-operation`, `--num-partitions`,
    `--default-replication-factor`); the defaults are the daemon's."""

    snapshot_bytes: int = DEFAULT_SNAPSHOT_BYTES
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    retention_bytes: int = DEFAULT_RETENTION_BYTES
    max_records_per_operation: int = ControllerConfig.max_records_per_operation
    default_partitions: int = ControllerConfig.default_partitions
    default_replication_factor: int = ControllerConfig.default_replication_factor

    @classmethod
    def drawn(cls, seed: int, partitions: int) -> NodeSettings:
        """A seed's settings (see the module rules), each from a generator of its own: half the seeds
        Kafka's defaults for the log, half a small log (a snapshot every 1-4 KB, segments of 2-8 KB,
        3-6 segments' worth kept); a third a record cap of what a topic of
        `partitions` partitions takes to create (its TopicRecord and one PartitionRecord each) or one more;
        half the seeds, topic defaults of their own."""
        rng = random.Random(f"{seed}:settings")
        caps = random.Random(f"{seed}:record-cap")
        cap = caps.randint(partitions + 1, partitions + 2) if caps.random() < 1 / 3 else cls.max_records_per_operation
        defaults = random.Random(f"{seed}:topic-defaults")
        count, factor = cls.default_partitions, cls.default_replication_factor
        if defaults.random() < 0.5:
            count, factor = defaults.randint(2, 4), defaults.randint(2, 3)
        if rng.random() < 0.5:
            return cls(max_records_per_operation=cap, default_partitions=count, default_replication_factor=factor)
        segment = rng.randint(2048, 8192)
        return cls(rng.randint(1024, 4096), segment, rng.randint(3, 6) * segment, cap, count, factor)


class SimNode:
    """One node across its incarnations (what the fleet's probes and faults read of it)."""

    def __init__(self, node_id: int, address: Address, data_dir: Path, disk: SimDisk) -> None:
        self.node_id = node_id
        self.address = address
        self.data_dir = data_dir
        self.disk = disk
        self.running = False
        self.paused = False
        self.cut = False
        self.starts = 0
        self.boot_ns = 0  # how long its machine had run when the simulation began (see the rules)
        self.scope: trio.CancelScope | None = None
        self.daemon: Daemon | None = None


class SimQuorum(Quorum):
    """The quorum of `plan.nodes` daemons in this process (see the module rules)."""

    def __init__(
        self,
        plan: QuorumPlan,
        network: SimNetwork,
        seed: int,
        disk_s: tuple[float, float] = (0, 0),
        settings: NodeSettings = NodeSettings(),
    ) -> None:
        # the attributes the fleet reads of a quorum (`Quorum`), without processes or proxies
        self.plan = plan
        self.network = network
        self.seed = seed
        self.disk_s = disk_s
        self.settings = settings
        self.ids = list(range(1, plan.nodes + 1))
        self.addresses: dict[int, Address] = {node: (host_name(node), PORT) for node in self.ids}
        self.proxies = {}
        self.client_tls = None
        self.probes = {node: Probe(address) for node, address in self.addresses.items()}
        self.failures: list[str] = []
        self._nursery: trio.Nursery | None = None
        self.nodes: dict[int, SimNode] = {  # type: ignore[assignment]
            node: SimNode(
                node, address, plan.node_dir(node), SimDisk(plan.node_dir(node), random.Random(f"{seed}:disk-{node}"))
            )
            for node, address in self.addresses.items()
        }
        self._crashes = random.Random(f"{seed}:machine-crashes")
        self._boots = random.Random(f"{seed}:boots")
        self._disk_errors = random.Random(f"{seed}:disk-errors")
        for node in self.nodes.values():
            node.boot_ns = self._boot_ns()
        #: the voters, as every node is configured with them
        self.voter_list = tuple(Voter(node, host, port) for node, (host, port) in self.addresses.items())
        #: Kafka's Raft invariants, after every step of every node's Raft core
        self.watch = RaftWatch(self.ids, trio.current_time)

    async def start(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        self.plan.data_dir.mkdir(parents=True, exist_ok=True)
        for node in self.nodes.values():
            await self._start(node)
        await super()._elected()

    async def _start(self, node: SimNode) -> None:
        assert self._nursery is not None
        node.starts += 1
        node.running = True
        node.disk.failing = None  # a replaced disk, or one that came back
        await self._nursery.start(self._run_node, node)

    async def _run_node(self, node: SimNode, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        rng = random.Random(f"{self.seed}:node-{node.node_id}:{node.starts}")
        runtime = NodeRuntime(self.network.host(node.address[0]), rng, node.boot_ns, self.disk_s, node.disk)
        node.disk.mounted()
        plan = self.plan
        with trio.CancelScope() as scope, controller_runtime.use(runtime):
            node.scope = scope
            try:
                engine = self._load(node, rng)
            except LogError as error:  # the daemon's exit 1 ("fencer-controller: ..."): the node stays down
                self.failures.append(f"node {node.node_id} (start {node.starts}) refused to start: {error}")
                log.error("node %d refused to start: %s", node.node_id, error)
                node.running = False
                task_status.started()
                return
            quorum = QuorumConfig(
                node.node_id,
                self.voter_list,
                election_timeout_ms=round(plan.timing.election_timeout_s * 1000),
                fetch_timeout_ms=round(plan.timing.fetch_timeout_s * 1000),
            )
            options = DaemonOptions(host=node.address[0], port=PORT, handle_signals=False)
            daemon = node.daemon = Daemon(engine, options, quorum, rng=rng)
            daemon.quorum.driver.observer = self.watch.step
            try:
                async with trio.open_nursery() as nursery:
                    await nursery.start(daemon.run)
                    task_status.started()
            except BaseException as exc:
                failed = find_failure(exc, LogError)
                if failed is not None and node.disk.failing is not None:
                    log.error("node %d exited: its log failed: %s", node.node_id, failed)  # the daemon's exit 1
                elif isinstance(exc, Exception):  # the daemon died of an error: its process's exit 1
                    self.failures.append(f"node {node.node_id} (start {node.starts}) crashed: {first_error(exc)}")
                    log.error("node %d crashed", node.node_id, exc_info=exc)
                else:
                    raise
            finally:
                engine.close()  # a crash's descriptors go with the process
                self.watch.down(node.node_id)
        node.running = False

    def _boot_ns(self) -> int:
        """A machine's monotonic clock at the simulation's time 0: up from a second to ten days."""
        return self._boots.randrange(10**9, 10 * 86_400 * 10**9)

    def _load(self, node: SimNode, rng: random.Random) -> ControllerEngine:
        """The node's engine over its data dir, as the daemon loads it at start-up."""
        plan = self.plan
        return ControllerEngine.load(
            node.data_dir,
            cluster_id=plan.cluster_id,
            node_id=node.node_id,
            session_timeout_ms=plan.session_timeout_ms,
            host=node.address[0],
            port=PORT,
            fsync=True,  # to the simulated disk (see the rules)
            snapshot_bytes=self.settings.snapshot_bytes,
            segment_bytes=self.settings.segment_bytes,
            metadata_retention_bytes=self.settings.retention_bytes,
            max_records_per_operation=self.settings.max_records_per_operation,
            default_partitions=self.settings.default_partitions,
            default_replication_factor=self.settings.default_replication_factor,
            rng=random.Random(rng.random()),
        )

    # ------------------------------------------------------------------ faults
    async def kill(self, node: int) -> None:
        """A crash of the node's process or, as the seed draws, of its machine, maybe after its disk
        failed (see the rules)."""
        target = self.nodes[node]
        if target.running and self._disk_errors.random() < DISK_ERRORS:
            target.disk.failing = self._disk_errors.choice((errno.EIO, errno.ENOSPC))
            self.watch.disk_failing(node)
            log.info("node %d: its disk fails every fsync (%s)", node, errno.errorcode[target.disk.failing])
            with trio.move_on_after(DISK_ERROR_S):
                while target.running:
                    await trio.sleep(0.01)
        await self._down(node)
        if self._crashes.random() < POWER_LOSS:
            lost = target.disk.power_loss()
            # the machine boots again: its monotonic clock starts over, a few seconds before the restart
            target.boot_ns = self._boots.randrange(10**9, 10 * 10**9) - int(trio.current_time() * 1e9)
            log.info("node %d: its machine crashed: %s", node, "; ".join(lost) or "everything was fsync'd")

    async def _down(self, node: int) -> None:
        target = self.nodes[node]
        if target.scope is not None:
            target.scope.cancel()
        self.network.crash(target.address[0])
        while target.running:
            await trio.sleep(0.001)
        await self.probes[node].close()

    async def restart(self, node: int) -> None:
        target = self.nodes[node]
        if not target.running:
            await self._start(target)

    async def shutdown(self, node: int) -> None:
        """A graceful stop (SIGTERM): the daemon drains and closes its log, then its connections go."""
        target = self.nodes[node]
        if target.running and target.daemon is not None:
            await target.daemon.shutdown()
        await self._down(node)

    async def wipe(self, node: int) -> None:
        """`node` killed and its persistent state gone (its metadata log, snapshots and quorum-state;
        `meta.properties`, the formatting, stays): Kafka's `killAndDeletePersistentState`."""
        await self._down(node)
        for path in self.nodes[node].data_dir.iterdir():
            if path.name != "meta.properties":
                shutil.rmtree(path) if path.is_dir() else path.unlink()

    def split(self, minority: Sequence[int]) -> None:
        """The nodes of `minority` reach each other but none of the others, nor they them (each
        is `cut`: `heal` them one by one)."""
        for node in minority:
            self.nodes[node].cut = True
            for other in self.ids:
                if other not in minority:
                    self.network.partition(host_name(node), host_name(other))

    def pause(self, node: int) -> None:
        self.nodes[node].paused = True
        self.network.isolate(host_name(node))

    def resume(self, node: int) -> None:
        self.nodes[node].paused = False
        self.network.heal_host(host_name(node))
        self._reapply_cuts()

    def cut(self, node: int) -> None:
        self.nodes[node].cut = True
        for other in self.ids:
            if other != node:
                self.network.partition(host_name(node), host_name(other))

    def heal(self, node: int) -> None:
        self.nodes[node].cut = False
        for other in self.ids:
            if other != node and not self.nodes[other].cut:
                self.network.heal(host_name(node), host_name(other))

    def _reapply_cuts(self) -> None:
        for node in self.ids:
            if self.nodes[node].cut:
                self.cut(node)

    async def stop(self) -> None:
        """Every node stopped as SIGTERM stops it (drained, its log closed)."""
        for node in self.nodes.values():
            if node.paused:
                self.resume(node.node_id)
        for node in self.nodes.values():
            if node.running and node.daemon is not None:
                with trio.move_on_after(20):
                    await node.daemon.shutdown()
                if node.scope is not None:
                    node.scope.cancel()
        for probe in self.probes.values():
            await probe.close()


def host_name(node: int) -> str:
    return f"controller-{node}"


def first_error(exc: BaseException) -> str:
    """The first error behind `exc` (inside nested exception groups), as one line."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"
