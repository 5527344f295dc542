"""The fleet process: brokers, fault driver, admin and ticker in one nursery, for the run's duration.

Rules:
- Start: raise the descriptor limit (every broker holds two controller connections, a listening
  socket and the controller's connection to it), then reach the controller (DescribeCluster,
  retried for `REACH_S`, moving through the controllers of the list as every connection does):
  any answer will do, NOT_CONTROLLER too (a quorum still electing its leader is there to be
  tested). If none can be reached the run ends at once with one clear line and nothing else
  happens (no journal entry).
- The journal opens with `RunStarted` and closes with `RunEnded`, also when the run is cancelled
  (written under a shield). Shutdowns still in progress at the end are journalled unfinished.
- `alongside`: tasks started beside the brokers once the fleet's context exists, each given it,
  and cancelled with them when the duration ends (the fleet's own quorum's controller faults).
- The ticker, once a second: brokers by state into the stats, journal flush; every
  `capture.ROTATE_S`: a capture part.
- Garbage collection: after start-up the objects alive are frozen (never scanned again) and the
  young generation is made larger, as the daemon does: with a thousand brokers a full collection
  held the event loop for over half a second. The previous settings are restored at the end.
- `finished`: the run lasted its duration and the controller answered within the last
  `max(10 s, 3 session timeouts)` (an answer that says NOT_CONTROLLER is none: the active one must
  have answered).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import resource
import ssl
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import trio

from broker_sim import journal
from broker_sim.model import request_probes
from broker_sim.model.broker import BrokerModel
from broker_sim.model.fleet_view import FleetView
from broker_sim.model.lag import LagModel, mean_gap_for
from broker_sim.model.lifecycle import Phase
from broker_sim.model.schedule import fault_schedule
from broker_sim.model.timing import Timing
from broker_sim.stats import FleetStats
from protocol import registry
from protocol.messages.describe_cluster import DescribeClusterRequest

from .admin import Admin
from .broker import BrokerRunner
from .capture import ROTATE_S, FleetCapture
from .connection import Address, BadAnswer, ConnectionLost, ControllerConnection, peer_name
from .context import FleetContext
from .faults import FaultDriver
from .recorder import Recorder
from .runtime import wall_ns
from .tls import FleetTls

log = logging.getLogger("fencer.broker_sim.shell.fleet")
REACH_S = 5.0
#: a task run beside the fleet's brokers, given the fleet's context
Alongside = Callable[[FleetContext], Awaitable[None]]
GC_THRESHOLDS = (20_000, 20, 50)


@dataclass(frozen=True)
class RunSpec:
    """The fleet's configuration as the shell needs it (broker_sim.shell.fleet.FleetConfig, resolved)."""

    controllers: tuple[Address, ...]
    broker_ids: tuple[int, ...]
    topics: int
    partitions: int
    replication_factor: int
    duration_s: float
    seed: int
    scenario: str
    timing: Timing
    shutdown_bound_ms: int
    capture_dir: Path | None
    journal_path: Path | None
    create_topics: bool
    listen_host: str
    tls: FleetTls | None = None
    replication_factors: tuple[int, ...] = ()  # the first topics' (FleetConfig.replication_factors)
    controller_defaults: tuple[int, int] | None = None  # FleetConfig.controller_defaults
    delivery_bound_ms: int = 0  # FleetConfig.delivery_bound_ms


def warm_codecs() -> None:
    """Compile every codec now (about 1.5 s): a first use during the run would stall every broker."""
    registry.compile_codecs(frozenset(registry.api_keys()))


def raise_descriptor_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def reach(controllers: tuple[Address, ...], tls: ssl.SSLContext | None = None) -> str | None:
    """None when a controller of the list answers DescribeCluster; otherwise why not, in one line."""
    connection = ControllerConnection(controllers, "fleet-probe", tls=tls)
    reason = "no answer"
    deadline = trio.current_time() + REACH_S
    try:
        while trio.current_time() < deadline:
            try:
                await connection.request(DescribeClusterRequest(), 0, REACH_S)
                return None
            except (ConnectionLost, BadAnswer) as exc:
                reason = str(exc)
            await trio.sleep(0.25)
    finally:
        await connection.drop()
    if len(controllers) == 1:
        return f"cannot reach the controller at {peer_name(controllers[0])}: {reason}"
    return f"cannot reach any controller of {','.join(map(peer_name, controllers))}: {reason}"


async def run(
    spec: RunSpec, stats: FleetStats, task_status: trio.TaskStatus[None], alongside: Sequence[Alongside] = ()
) -> tuple[bool, str | None]:
    raise_descriptor_limit()
    warm_codecs()
    client_tls, listener_tls = spec.tls.contexts() if spec.tls is not None else (None, None)
    unreachable = await reach(spec.controllers, client_tls)
    if unreachable is not None:
        return False, unreachable
    capture = FleetCapture(spec.capture_dir, spec.broker_ids[0] * 1_000_000) if spec.capture_dir else None
    writer = journal.JournalWriter(spec.journal_path) if spec.journal_path is not None else None
    recorder = Recorder(stats, writer, capture, trio.current_time(), wall_ns())
    ctx = FleetContext(
        controllers=spec.controllers,
        listen_host=spec.listen_host,
        seed=spec.seed,
        scenario=spec.scenario,
        duration_s=spec.duration_s,
        timing=spec.timing,
        recorder=recorder,
        t0=recorder.t0,
        client_tls=client_tls,
        listener_tls=listener_tls,
    )
    runners = _brokers(spec, ctx)
    recorder.write(_run_started(spec, recorder.wall0_ns))
    task_status.started()
    lasted = False
    with _collector_tuned():
        try:
            with trio.move_on_after(spec.duration_s) as scope:
                await _fleet(spec, ctx, runners, alongside)
            lasted = scope.cancelled_caught
        finally:
            with trio.CancelScope(shield=True):
                finished = lasted and ctx.now() - ctx.last_answer < max(10.0, 3 * spec.timing.session_timeout_s)
                await _close(ctx, runners, writer, capture, finished)
    return finished, None


def _run_started(spec: RunSpec, wall_ns: int) -> journal.RunStarted:
    return journal.RunStarted(
        wall_ns,
        spec.seed,
        spec.scenario,
        len(spec.broker_ids),
        spec.broker_ids[0],
        int(spec.timing.heartbeat_s * 1000),
        int(spec.timing.session_timeout_s * 1000),
        spec.shutdown_bound_ms,
        journals_states=True,
        delivery_bound_ms=spec.delivery_bound_ms,
        silence_slack_ms=round(spec.timing.silence_slack_s * 1000),
    )


@contextlib.contextmanager
def _collector_tuned() -> Iterator[None]:
    """The garbage collector for a long run: what exists at start frozen, `GC_THRESHOLDS` meanwhile."""
    thresholds = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def _brokers(spec: RunSpec, ctx: FleetContext) -> dict[int, BrokerRunner]:
    lag = LagModel(
        spec.seed,
        mean_gap_s=mean_gap_for(spec.topics, spec.partitions, spec.replication_factor),
        warmup_s=spec.timing.warmup_s,
        horizon_s=spec.duration_s,
    )
    view = FleetView(ctx.models, lag, spec.timing)
    probe_gap_s = request_probes.gap_for(len(spec.broker_ids))
    for broker_id in spec.broker_ids:
        ctx.models[broker_id] = BrokerModel(
            broker_id,
            spec.seed,
            spec.timing,
            view,
            ctx.topic_ids,
            stale_replays=spec.scenario == "chaos",
            probe_gap_s=probe_gap_s,
        )
    return {broker_id: BrokerRunner(ctx, model) for broker_id, model in ctx.models.items()}


async def _fleet(
    spec: RunSpec, ctx: FleetContext, runners: dict[int, BrokerRunner], alongside: Sequence[Alongside]
) -> None:
    faults = fault_schedule(spec.seed, spec.scenario, spec.broker_ids, spec.duration_s, spec.timing)
    async with trio.open_nursery() as nursery:
        for task in alongside:
            nursery.start_soon(task, ctx)
        for runner in runners.values():
            nursery.start_soon(runner.run)
        nursery.start_soon(_ticker, ctx)
        nursery.start_soon(FaultDriver(ctx, runners, faults).run)
        if spec.create_topics:
            admin = Admin(
                ctx, spec.topics, spec.partitions, spec.replication_factor, list(spec.broker_ids),
                spec.replication_factors, spec.controller_defaults,
            )  # fmt: skip
            nursery.start_soon(admin.run)


async def _ticker(ctx: FleetContext) -> None:
    recorder = ctx.recorder
    last_capture = 0.0
    while True:
        await trio.sleep(1.0)
        now = ctx.now()
        states = Counter(state_name(model, now) for model in ctx.models.values())
        recorder.stats.brokers_by_state.clear()
        recorder.stats.brokers_by_state.update(states)
        if recorder.writer is not None:
            recorder.writer.flush()
        if recorder.capture is not None and now - last_capture >= ROTATE_S:
            last_capture = now
            await recorder.capture.flush()


async def _close(
    ctx: FleetContext,
    runners: dict[int, BrokerRunner],
    writer: journal.JournalWriter | None,
    capture: FleetCapture | None,
    finished: bool,
) -> None:
    for runner in runners.values():
        runner.model.abandon_shutdown()
        ctx.recorder.events(runner.broker_id, runner.model.events)
        runner.model.events.clear()
    ctx.recorder.write(journal.RunEnded(wall_ns(), finished))
    if writer is not None:
        writer.close()
    if capture is not None:
        await capture.flush()


def state_name(model: BrokerModel, t: float) -> str:
    """A broker's state for the live display."""
    if t < model.paused_until:
        return "paused"
    if model.shutdown is not None:
        return "shutting-down"
    phase = model.lifecycle.phase
    if phase in (Phase.DESCRIBING, Phase.NEGOTIATING, Phase.REGISTERING):
        return "registering"
    name: str = phase.value
    return name
