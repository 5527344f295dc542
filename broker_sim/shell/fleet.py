"""The fleet's entry point: run simulated brokers against a controller for a duration.

`run_fleet(config, stats)` is what the CLI (and tests, and the benchmark) call: it runs the
brokers `first_broker_id .. first_broker_id + brokers - 1` of the cluster with the scenario's
faults, updates `stats` live, writes the journal (and the capture) when asked, and returns how
the run ended. `task_status.started()` is called once the controller answered; an unreachable
controller returns at once with `unreachable` set (and `started` is never called).

Controllers: `controller_host:controller_port`, then `other_controllers` in order (the rest of
`--controller`'s list: a quorum's voters); every connection starts at the first and moves through
the list on NOT_CONTROLLER or a broken connection (`connection`). `controllers` is the whole list.

The liveness bound: every controlled shutdown must complete within `shutdown_bound_ms(config)`,
two session timeouts plus two heartbeat intervals (broker_sim.model.timing); the journal's
`RunStarted` carries it for the checker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import trio

from ..model.schedule import ALL_SCENARIOS, SCENARIOS
from ..model.timing import Timing, timing_for
from ..stats import FleetStats
from . import runner
from .tls import FleetTls

__all__ = ["ALL_SCENARIOS", "SCENARIOS", "FleetConfig", "FleetOutcome", "FleetStats", "run_fleet", "shutdown_bound_ms"]


@dataclass(frozen=True)
class FleetConfig:
    controller_host: str = "127.0.0.1"
    controller_port: int = 9093
    other_controllers: tuple[tuple[str, int], ...] = ()  # after the first, in the order to try them
    brokers: int = 3
    first_broker_id: int = 0
    topics: int = 1
    partitions: int = 3  # per topic
    replication_factor: int = 3
    #: the replication factor of the first topics, in order (the rest: `replication_factor`)
    replication_factors: tuple[int, ...] = ()
    #: the controller's default partition count and replication factor (Kafka's num.partitions and
    #: default.replication.factor), when the run set them: a topic asked with -1 is journalled and
    #: judged with them; None: unknown, such a topic's shape is not judged
    controller_defaults: tuple[int, int] | None = None
    #: the checker's bound on deliveries to brokers (RunStarted.delivery_bound_ms); 0: the shutdown
    #: bound, which allows for a loaded machine
    delivery_bound_ms: int = 0
    duration_s: float = 30.0
    seed: int = 0
    scenario: str = "steady"  # steady | rolling-restart | disk-failures | chaos | controller-failover (--quorum)
    heartbeat_ms: int = 2000
    session_timeout_ms: int = 9000  # the controller's (pauses are made longer than this)
    capture_dir: Path | None = None  # write exchanges from the broker side (protocol.capture format, prefix "fleet")
    journal_path: Path | None = None
    create_topics: bool = True  # False in all but one fleet process of a --processes run
    listen_host: str = "127.0.0.1"
    tls: FleetTls | None = None  # --tls-cert/--tls-key/--tls-ca (broker_sim.shell.tls)

    @property
    def controllers(self) -> tuple[tuple[str, int], ...]:
        """Every controller of the list, the first first."""
        return ((self.controller_host, self.controller_port), *self.other_controllers)


@dataclass(frozen=True)
class FleetOutcome:
    finished: bool  # ran for the duration
    unreachable: str | None  # one clear line when the controller could not be reached at start


def shutdown_bound_ms(config: FleetConfig) -> int:
    """Every controlled shutdown completes within this many milliseconds (the stated liveness bound)."""
    return int(timing_of(config).shutdown_bound_s * 1000)


def timing_of(config: FleetConfig) -> Timing:
    """Every interval and bound of the run's brokers (broker_sim.model.timing)."""
    replicas = config.topics * config.partitions * config.replication_factor
    return timing_for(config.heartbeat_ms, config.session_timeout_ms, replicas)


def _validate(config: FleetConfig) -> None:
    if config.scenario not in ALL_SCENARIOS:
        raise ValueError(f"unknown scenario {config.scenario!r}: one of {', '.join(ALL_SCENARIOS)}")
    if config.brokers < 1 or config.first_broker_id < 0:
        raise ValueError("brokers must be at least 1 and first_broker_id at least 0")
    if config.topics < 0 or config.partitions < 1 or min((config.replication_factor, *config.replication_factors)) < 1:
        raise ValueError("topics must be at least 0, partitions and replication_factor at least 1")
    if config.heartbeat_ms < 1 or config.session_timeout_ms <= config.heartbeat_ms or config.duration_s <= 0:
        raise ValueError("heartbeat_ms must be positive and below session_timeout_ms; duration_s positive")


async def run_fleet(
    config: FleetConfig,
    stats: FleetStats,
    *,
    alongside: Sequence[runner.Alongside] = (),
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> FleetOutcome:
    """Run the fleet for `config.duration_s` seconds (with `alongside` tasks beside its brokers, given
    its context: `runner`); raises ValueError on a bad configuration."""
    _validate(config)
    spec = runner.RunSpec(
        controllers=config.controllers,
        broker_ids=tuple(range(config.first_broker_id, config.first_broker_id + config.brokers)),
        topics=config.topics,
        partitions=config.partitions,
        replication_factor=config.replication_factor,
        replication_factors=config.replication_factors,
        controller_defaults=config.controller_defaults,
        delivery_bound_ms=config.delivery_bound_ms,
        duration_s=config.duration_s,
        seed=config.seed,
        scenario=config.scenario,
        timing=timing_of(config),
        shutdown_bound_ms=shutdown_bound_ms(config),
        capture_dir=config.capture_dir,
        journal_path=config.journal_path,
        create_topics=config.create_topics,
        listen_host=config.listen_host,
        tls=config.tls,
    )
    finished, unreachable = await runner.run(spec, stats, task_status, alongside)
    return FleetOutcome(finished=finished, unreachable=unreachable)
