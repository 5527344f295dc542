"""One seed of the simulation: a quorum of real daemons and the fleet's brokers in one process, on
one scheduler, with simulated time and network; then the fleet's final check of every node's log.

Rules:
- Everything runs in one `trio.run` on trio's mock clock (time jumps whenever every task waits),
  with trio's deterministic scheduling seeded from the seed; the network (`network`), the nodes
  (`cluster`), the fleet (the seed is its seed) and the controller faults of the scenario
  (`model.schedule.controller_fault_schedule`) draw from the seed too. The same seed, in a process
  with the same hash seed (`PYTHONHASHSEED`, which the command line fixes), runs the same way.
- The brokers are the fleet's (`broker_sim.shell`: its model, its connections, its listeners, its
  journal), on the network's host `fleet`; the controller faults and the quorum's probes are the
  fleet's too, applied to the simulated nodes.
- Every log line of the run (the nodes' and the fleet's, INFO and up) goes to the seed's `sim.log`,
  stamped with the simulation's time and the host that wrote it.
- The verdict is the fleet's: the violations found while running and by the final check of the
  nodes' data dirs with the journal (`report.run_quorum_check`), and the run's failures (a node
  that could not start, a node's daemon that died of an error, its first line said and its
  traceback in `sim.log`; a fleet that could not reach the quorum); and the simulation's own
  invariants on the journal (`invariants`: what a wall clock cannot hold a quorum to).
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import trio
import trio.testing

from broker_sim.journal import read_journal
from broker_sim.model.quorum import QuorumTiming
from broker_sim.model.schedule import controller_fault_schedule
from broker_sim.report import FinalCheck, RunResult, exit_status, run_quorum_check
from broker_sim.shell import runtime as fleet_runtime
from broker_sim.shell.fleet import FleetConfig, run_fleet, timing_of
from broker_sim.shell.quorum import QuorumError, QuorumPlan
from broker_sim.shell.quorum_faults import ControllerFaults
from broker_sim.stats import FleetStats
from controller import runtime as controller_runtime

from .cluster import EPOCH_NS, NodeRuntime, NodeSettings, SimQuorum
from .invariants import elections_without_fault, fences_of_live_brokers
from .network import HostNetwork, SimNetwork
from .raft_watch import RaftWatch
from .scenarios import COMPOSED, RAFT_SCENARIOS, ScenarioFaults

FLEET_HOST = "fleet"
#: how often the fleet's quorum watcher asks every node DescribeQuorum in a simulation: half of a
#: seed's scheduler steps went to it at the fleet's 0.1 s, and every bound it feeds is seconds long
POLL_S = 0.5
CLUSTER_ID = "c2ltdWxhdGVkLWNsdXN0ZXI"  # 22 characters of base64, as Kafka's cluster ids


@dataclass(frozen=True)
class SimSpec:
    """What one simulated run is: the cluster, the fleet's scenario and how long it runs (simulated)."""

    seed: int
    scenario: str = "controller-failover"
    voters: int | None = None  # None: the Raft scenario's seeded choice (`scenarios`), else 3
    brokers: int = 5
    topics: int = 2
    partitions: int = 3
    replication_factor: int = 3
    duration_s: float = 40.0
    session_timeout_ms: int = 9000
    heartbeat_ms: int = 2000
    timing: QuorumTiming = field(default_factory=QuorumTiming)
    #: the disk's latency per blocking write (seconds, low and high)
    disk_s: tuple[float, float] = (0.0005, 0.003)
    #: the nodes' log and operation options (None: the seed's draw, `NodeSettings.drawn`)
    settings: NodeSettings | None = None
    #: the first topics' replication factors (None: the seed's draw, `factors_of`)
    replication_factors: tuple[int, ...] | None = None


@dataclass
class SimResult:
    spec: SimSpec
    run: RunResult
    final: FinalCheck | None
    status: int  # the fleet's exit status: 0 clean, 1 a violation or a failure
    simulated_s: float
    directory: Path
    #: the simulation's own invariants broken (`invariants`)
    simulated: list[str] = field(default_factory=list)

    @property
    def violations(self) -> list[str]:
        """Every violation: found while running, by the final check, then the simulation's own."""
        found = list(self.run.stats.violations)
        return found + ([] if self.final is None else [line for _rule, line in self.final.violations]) + self.simulated


class FleetRuntime:
    """The fleet's runtime (`broker_sim.shell.runtime.Runtime`) on the simulated network and clock."""

    def __init__(self, net: HostNetwork) -> None:
        self.net = net

    async def open_tcp_stream(self, host: str, port: int) -> trio.abc.Stream:
        return await self.net.open_tcp_stream(host, port)

    async def open_tcp_listeners(self, port: int, host: str) -> Sequence[trio.abc.Listener[Any]]:
        return await self.net.open_tcp_listeners(port, host)

    def wall_ns(self) -> int:
        return EPOCH_NS + int(trio.current_time() * 1e9)


def voters_of(spec: SimSpec) -> int:
    """The voters of `spec`'s quorum (see `SimSpec.voters`)."""
    if spec.voters is not None:
        return spec.voters
    raft = RAFT_SCENARIOS.get(spec.scenario)
    return 3 if raft is None else random.Random(f"{spec.seed}:voters").randint(*raft.voters)


def factors_of(spec: SimSpec) -> tuple[int, ...]:
    """The first topics' replication factors (see `SimSpec.replication_factors`): half the seeds
    run their last topic at a factor from 1 to one below the run's (when it has two topics or more
    and a factor above 1), so that partitions of factor 1 and 2 meet the broker faults; the rest run
    every topic at the run's factor."""
    if spec.replication_factors is not None:
        return spec.replication_factors
    rng = random.Random(f"{spec.seed}:factors")
    if spec.topics < 2 or spec.replication_factor < 2 or rng.random() >= 1 / 2:
        return ()
    return (*[spec.replication_factor] * (spec.topics - 1), rng.randint(1, spec.replication_factor - 1))


def delivery_bound_ms(spec: SimSpec) -> int:
    """The checker's bound on deliveries to brokers in a simulation: a session timeout and half a
    heartbeat (10 s at the defaults), where a wall-clock run allows two sessions and two heartbeats
    for a loaded machine. A paused broker's count starts when its pause ends. Measured 2026-12-07
    on the pristine controller: 150 seeds of every scenario clean at 10 s; at 8 s one chaos seed of
    40 was not."""
    return spec.session_timeout_ms + spec.heartbeat_ms // 2


def run_seed(spec: SimSpec, directory: Path, instruments: Sequence[trio.abc.Instrument] = ()) -> SimResult:
    """Simulate `spec` with its files under `directory` (which must be empty or absent);
    `instruments` watch the run (they change nothing it decides)."""
    directory.mkdir(parents=True, exist_ok=True)
    voters = voters_of(spec)
    settings = spec.settings or NodeSettings.drawn(spec.seed, spec.partitions)
    spec = replace(spec, voters=voters, settings=settings, replication_factors=factors_of(spec))
    plan = QuorumPlan(
        nodes=voters,
        data_dir=directory / "quorum",
        cluster_id=CLUSTER_ID,
        session_timeout_ms=spec.session_timeout_ms,
        timing=spec.timing,
    )
    config = FleetConfig(
        brokers=spec.brokers,
        topics=spec.topics,
        partitions=spec.partitions,
        replication_factor=spec.replication_factor,
        replication_factors=spec.replication_factors or (),
        controller_defaults=(settings.default_partitions, settings.default_replication_factor),
        delivery_bound_ms=delivery_bound_ms(spec),
        duration_s=spec.duration_s,
        seed=spec.seed,
        scenario=_fleet_scenario(spec.scenario),
        heartbeat_ms=spec.heartbeat_ms,
        session_timeout_ms=spec.session_timeout_ms,
        journal_path=directory / "journal.jsonl",  # read again by the simulation's invariants
        listen_host=FLEET_HOST,
    )
    clock = trio.testing.MockClock(autojump_threshold=0)
    _deterministic_scheduling(spec.seed)
    with _logged_to(directory / "sim.log"):
        result, watch = trio.run(_simulate, spec, config, plan, clock=clock, instruments=instruments)
    final = None
    if result.unreachable is None:
        final = run_quorum_check(plan.data_dir, plan.node_dirs, config.journal_path)
    journal = directory / "journal.jsonl"
    simulated = []
    if journal.exists():
        entries = list(read_journal(journal))
        simulated = elections_without_fault(entries) + fences_of_live_brokers(plan.node_dirs, entries)
    simulated = watch.violations + simulated
    status = max(exit_status(result, final), 1 if simulated else 0)
    return SimResult(spec, result, final, status, clock.current_time(), directory, simulated)


async def _simulate(spec: SimSpec, config: FleetConfig, plan: QuorumPlan) -> tuple[RunResult, RaftWatch]:
    result = RunResult(stats=FleetStats())
    network = SimNetwork(random.Random(f"{spec.seed}:network"))
    assert spec.settings is not None  # run_seed's draw
    quorum = SimQuorum(plan, network, spec.seed, spec.disk_s, spec.settings)
    raft = RAFT_SCENARIOS.get(spec.scenario)
    quorum.watch.relaxed = raft is not None and raft.relaxed
    with fleet_runtime.use(FleetRuntime(network.host(FLEET_HOST))):
        async with trio.open_nursery() as nursery:
            try:
                await quorum.start(nursery)
                (host, port), *others = quorum.controllers
                config = replace(config, controller_host=host, controller_port=port, other_controllers=tuple(others))
                driver = _driver(spec, config, quorum)
                outcome = await run_fleet(config, result.stats, alongside=[driver.run])
                result.finished, result.unreachable = outcome.finished, outcome.unreachable
                if isinstance(driver, ScenarioFaults):
                    result.stats.violations.extend(driver.stuck)
            except QuorumError as error:
                result.unreachable = str(error)
            finally:
                with trio.CancelScope(shield=True):
                    await quorum.stop()
                nursery.cancel_scope.cancel()
    result.failures.extend(quorum.failures)
    return result, quorum.watch


def _fleet_scenario(name: str) -> str:
    """The fleet's scenario for the brokers of a simulated `name` (a Raft scenario: steady, under its script)."""
    if name in RAFT_SCENARIOS:
        return "steady"
    return COMPOSED.get(name, name)


def _driver(spec: SimSpec, config: FleetConfig, quorum: SimQuorum) -> ControllerFaults:
    """The controller faults of the run: a Raft scenario's script, or the fleet's schedule."""
    raft = RAFT_SCENARIOS.get(spec.scenario)
    if raft is not None:
        return ScenarioFaults(quorum, raft, random.Random(f"{spec.seed}:script"), config.duration_s, POLL_S)
    faulted = "controller-failover" if spec.scenario in COMPOSED else config.scenario
    faults = controller_fault_schedule(config.seed, faulted, config.duration_s, timing_of(config), quorum.plan.timing)
    return ControllerFaults(quorum, faults, config.duration_s, POLL_S)


class _Stamp(logging.Filter):
    """Each line with the simulation's time and the host that wrote it (a node, or the fleet), and
    the seed's directory written as `SEED_DIR` (a snapshot's path, say), so that a seed's log is
    the same bytes wherever the seed runs."""

    def __init__(self, directory: Path) -> None:
        super().__init__()
        self.directory = str(directory)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if self.directory in message:
            record.msg, record.args = message.replace(self.directory, "SEED_DIR"), ()
        try:
            now = f"{trio.current_time():10.4f}"
        except RuntimeError:  # outside the run
            now = " " * 10
        node = controller_runtime.current()
        record.sim = f"{now} {node.net.name if isinstance(node, NodeRuntime) else FLEET_HOST:>12}"
        return True


@contextlib.contextmanager
def _logged_to(path: Path) -> Iterator[None]:
    """Every log line of the run (INFO and up) into `path`, and nowhere else meanwhile."""
    root = logging.getLogger()
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(sim)s %(levelname)-7s %(name)s: %(message)s"))
    handler.addFilter(_Stamp(path.parent))
    saved = root.handlers[:], root.level
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
        handler.close()


def _deterministic_scheduling(seed: int) -> None:
    """Trio's scheduler runs the tasks ready at once in an order of its random generator's choice;
    seeded (and in creation order first, as trio does under Hypothesis), the order is the seed's."""
    import trio._core._run as trio_run

    trio_run._ALLOW_DETERMINISTIC_SCHEDULING = True  # type: ignore[misc]
    trio_run._r.seed(seed)
