"""The journal's entries on the run and its brokers' lives: the run's start (the configuration
that makes it replayable, and the tolerances the checker holds it to) and end, registrations,
faults, fences and unfences, controlled shutdowns.

The run's entry records the tolerance on a silent broker's fencing (`RunStarted.silence_slack_ms`)
that the fleet's timing uses too; `silence_slack_s` is its one formula, so that the fleet (which
records it) and the checker (which derives it for a journal that does not record it) agree
without the checker importing the fleet's model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar


def silence_slack_s(heartbeat_s: float, session_timeout_s: float) -> float:
    """How long past its session a silent broker may stay unfenced (the checker's
    `silent-broker-unfenced`): 1 s, a heartbeat interval or a third of the session, whichever is
    longest, since a heartbeat sent just before a silence may be decided late by a loaded
    controller (its session runs from the decision)."""
    return max(1.0, heartbeat_s, session_timeout_s / 3)


@dataclass(frozen=True, slots=True)
class RunStarted:
    """The first entry of every fleet process: the arguments that make the run replayable."""

    kind: ClassVar[str] = "run"
    wall_ns: int
    seed: int
    scenario: str
    brokers: int
    first_broker_id: int
    heartbeat_ms: int
    session_timeout_ms: int  # the controller's, as the fleet assumes it (pauses are made longer)
    shutdown_bound_ms: int  # a controlled shutdown must complete within this (README, "What it decides")
    #: the fleet's brokers journal every partition state they accept (`StateObserved`): a run that
    #: holds none was delivered none. False (the default) reads a journal written before this field.
    journals_states: bool = False
    #: a committed partition state, StopReplica or FULL LeaderAndIsr reaches its broker within this,
    #: counted from the end of any pause of the broker meanwhile (0: `shutdown_bound_ms`, as a
    #: journal written before this field)
    delivery_bound_ms: int = 0
    #: how long past its session timeout a silent (crashed or paused) broker may stay unfenced, as
    #: the fleet's timing made its pauses outlast the session (0: not recorded; `silence_slack`
    #: then derives it from `heartbeat_ms` and `session_timeout_ms`)
    silence_slack_ms: int = 0

    @property
    def delivery_bound(self) -> int:
        """The bound the checker holds deliveries to, in ms (see `delivery_bound_ms`)."""
        return self.delivery_bound_ms or self.shutdown_bound_ms

    @property
    def silence_slack(self) -> int:
        """The slack the checker allows a silent broker past its session, in ms (see `silence_slack_ms`)."""
        if self.silence_slack_ms:
            return self.silence_slack_ms
        return round(silence_slack_s(self.heartbeat_ms / 1000, self.session_timeout_ms / 1000) * 1000)


@dataclass(frozen=True, slots=True)
class RunEnded:
    kind: ClassVar[str] = "end"
    wall_ns: int
    finished: bool  # False: the run was interrupted or the controller became unreachable


@dataclass(frozen=True, slots=True)
class Registered:
    """A BrokerRegistration answered NONE: this incarnation holds `broker_epoch`."""

    kind: ClassVar[str] = "registered"
    wall_ns: int
    broker: int
    incarnation_id: str
    broker_epoch: int
    #: the LogDirs the registration named (v2+; empty before, and in an older journal)
    log_dirs: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ShutdownTracked:
    """A controlled shutdown: from the first ControlledShutdown or WantShutDown to nothing remaining."""

    kind: ClassVar[str] = "shutdown"
    broker: int
    broker_epoch: int
    via: str  # "ControlledShutdown v<N>" or "heartbeat"
    started_wall_ns: int
    finished_wall_ns: int | None  # None: still remaining when the run ended or the broker crashed
    attempts: int


@dataclass(frozen=True, slots=True)
class Fenced:
    """A broker saw itself fenced (heartbeat IsFenced after being unfenced).

    `intended`: the fleet caused it on purpose (a crash, a pause, a shutdown). `longest_gap_ms`: the
    longest time between two heartbeats the broker sent (or tried) in the session before."""

    kind: ClassVar[str] = "fenced"
    wall_ns: int
    broker: int
    broker_epoch: int
    intended: bool
    longest_gap_ms: float


@dataclass(frozen=True, slots=True)
class FaultInjected:
    """A fault from the schedule, when the shell applied it."""

    kind: ClassVar[str] = "fault"
    wall_ns: int
    broker: int
    fault: str  # "crash", "pause", "drop-connection", "disk-failure", "disk-repair", "controlled-shutdown", ...
    duration_ms: float


@dataclass(frozen=True, slots=True)
class UnfencedSeen:
    """A broker's heartbeat was answered unfenced (IsFenced false) after it was fenced: the controller
    committed its unfencing before answering (a newer kind: older readers skip it)."""

    kind: ClassVar[str] = "unfenced"
    wall_ns: int
    broker: int
    broker_epoch: int
