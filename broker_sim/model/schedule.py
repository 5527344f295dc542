"""The fault schedule: a pure function of the seed, the scenario, the broker ids and the duration.

Rules:
- Each broker's faults come from its own `random.Random(f"{seed}:{broker}:faults:{scenario}")`,
  so a broker gets the same faults whatever the process split of the fleet. A broker's faults
  never overlap: the next starts after the previous one ended plus a gap. Nothing starts before
  `warmup_s` or ends after the duration (minus `tail_s`, so that a run ends with the cluster healed).
- `steady`: none. `rolling-restart`: one "controlled-shutdown" per broker, in an order given by
  the seeded rank (`at_s` is the rank, not a time: the shell runs them one at a time, each after the
  previous broker is back and caught up, and starts a new round while time remains).
  `disk-failures`: every broker loses a log dir once per cycle, at a seeded time within it.
  `chaos`: every kind below, with the first fault's kind rotating over consecutive broker ids so
  that a few brokers already see every kind.
- Kinds: "crash" (hard stop, restart after `duration_s`: 0.5-1.5 session timeouts, so some
  restarts meet DUPLICATE_BROKER_REGISTRATION), "pause" (a GC pause longer than the session
  timeout and the slack the checker allows before a silent broker must be fenced, by 1-3 s),
  "drop-connection" (the broker's controller connections close), "disk-failure" (log dir
  `log_dir` fails, repaired after `duration_s`), "controlled-shutdown" (`via`, restart after
  `duration_s` of downtime).
- Controller faults (`controller_fault_schedule`, only for a run with its own quorum, `--quorum`):
  `controller-failover` is steady broker traffic with them, `chaos` adds them to its broker faults.
  They come from `random.Random(f"{seed}:controller-faults:{scenario}")`, one at a time: the next
  starts once the previous one ended and the quorum had time to recover (a restarted node's
  start-up, `RESTART_S`; a woken or reconnected node's return, a fetch timeout) plus a gap. Their
  kinds come in rounds, each round a seeded order of "kill", "pause" and "cut", so that three faults
  see every kind. "kill": the leader (SIGKILL), restarted after `duration_s` (0.5-1.5 fetch
  timeouts: some restarts meet the election still going). "pause" (SIGSTOP, SIGCONT after
  `duration_s`) and "cut" (every proxy into and out of the node, healed after `duration_s`): the
  leader three times in four, else a follower (`pick` chooses which, at run time); either lasts
  `QuorumTiming.deposed_s` plus 0.5-1.5 s, so that a paused leader wakes up deposed (a zombie) and
  a cut-off one has resigned. Nothing starts before `warmup_s` or ends after the duration minus
  `tail_s`.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from .disks import LOG_DIRS
from .quorum import FOLLOWER, LEADER, QuorumTiming
from .shutdown import VIAS
from .timing import Timing

#: the scenarios any controller can be run against
SCENARIOS = ("steady", "rolling-restart", "disk-failures", "chaos")
#: the scenarios only a quorum the fleet started itself can be run against (`--quorum`)
QUORUM_SCENARIOS = ("controller-failover",)
ALL_SCENARIOS = SCENARIOS + QUORUM_SCENARIOS
CHAOS_KINDS = ("crash", "pause", "drop-connection", "disk-failure", "controlled-shutdown")
CONTROLLER_FAULT_KINDS = ("kill", "pause", "cut")
TAIL_S = 2.0
RESTART_S = 3.0  # a killed controller's start-up (a Python process importing fencer), and its catching up
LEADER_CHANCE = 0.75  # a pause or a cut-off hits the leader this often, else a follower


@dataclass(frozen=True, slots=True)
class Fault:
    at_s: float  # seconds since the fleet started (rolling-restart: the broker's rank)
    broker: int
    kind: str
    duration_s: float = 0.0
    via: str = ""
    log_dir: int = -1


def fault_schedule(
    seed: int, scenario: str, broker_ids: Iterable[int], duration_s: float, timing: Timing
) -> tuple[Fault, ...]:
    """Every fault of the run, ordered by time (rolling-restart: by rank)."""
    if scenario not in ALL_SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}: one of {', '.join(ALL_SCENARIOS)}")
    faults: list[Fault] = []
    for broker in broker_ids:
        rng = random.Random(f"{seed}:{broker}:faults:{scenario}")
        if scenario == "rolling-restart":
            faults.append(_shutdown(rng, broker, rng.random(), seed))
        elif scenario == "disk-failures":
            faults.extend(_disk_failures(rng, broker, duration_s, timing))
        elif scenario == "chaos":
            faults.extend(_chaos(rng, broker, seed, duration_s, timing))
    return tuple(sorted(faults, key=lambda fault: (fault.at_s, fault.broker)))


def _rotation(seed: int, broker: int, count: int) -> int:
    return (random.Random(f"{seed}:rotation").randrange(1 << 16) + broker) % count


def _shutdown(rng: random.Random, broker: int, at_s: float, seed: int) -> Fault:
    via = VIAS[_rotation(seed, broker, len(VIAS))]
    return Fault(at_s, broker, "controlled-shutdown", rng.uniform(0.5, 1.5), via=via)


def _disk_failures(rng: random.Random, broker: int, duration_s: float, timing: Timing) -> list[Fault]:
    end = duration_s - TAIL_S
    cycle = max(10.0, min(60.0, end - timing.warmup_s))
    faults = []
    start = timing.warmup_s
    while start < end:
        at = start + rng.uniform(0, cycle * 0.6)
        length = rng.uniform(2.0, 5.0)
        if at + length <= end:
            faults.append(Fault(at, broker, "disk-failure", length, log_dir=rng.randrange(LOG_DIRS)))
        start += cycle
    return faults


def _chaos(rng: random.Random, broker: int, seed: int, duration_s: float, timing: Timing) -> list[Fault]:
    end = duration_s - TAIL_S
    mean_gap = max(4.0, (end - timing.warmup_s) / 3)
    faults: list[Fault] = []
    now = timing.warmup_s + rng.uniform(0, mean_gap)
    kind = CHAOS_KINDS[_rotation(seed, broker, len(CHAOS_KINDS))]
    while True:
        fault = _chaos_fault(rng, broker, kind, now, timing)
        if fault.at_s + _length(fault, timing) > end:
            return faults
        faults.append(fault)
        now += _length(fault, timing) + rng.expovariate(1 / mean_gap)
        kind = rng.choice(CHAOS_KINDS)


def _chaos_fault(rng: random.Random, broker: int, kind: str, at: float, timing: Timing) -> Fault:
    session = timing.session_timeout_s
    if kind == "crash":
        return Fault(at, broker, kind, rng.uniform(0.5, 1.5) * session)
    if kind == "pause":
        return Fault(at, broker, kind, session + timing.silence_slack_s + rng.uniform(1.0, 3.0))
    if kind == "disk-failure":
        return Fault(at, broker, kind, rng.uniform(2.0, 5.0), log_dir=rng.randrange(LOG_DIRS))
    if kind == "controlled-shutdown":
        return Fault(at, broker, kind, rng.uniform(0.5, 1.5), via=rng.choice(VIAS))
    return Fault(at, broker, kind)


def _length(fault: Fault, timing: Timing) -> float:
    """How long a fault keeps its broker busy (a restart also registers and catches up)."""
    if fault.kind in ("crash", "controlled-shutdown"):
        return fault.duration_s + timing.session_timeout_s + timing.catch_up_s
    return fault.duration_s


@dataclass(frozen=True, slots=True)
class ControllerFault:
    at_s: float  # the earliest start, seconds since the fleet started (the shell waits for a whole quorum)
    kind: str  # CONTROLLER_FAULT_KINDS
    target: str  # LEADER or FOLLOWER, resolved when the fault starts
    pick: int  # a follower target: the pick-th of the followers by id, modulo their number
    duration_s: float  # kill: the downtime before the restart; pause: to SIGCONT; cut: to the heal


def controller_fault_schedule(
    seed: int, scenario: str, duration_s: float, timing: Timing, quorum: QuorumTiming
) -> tuple[ControllerFault, ...]:
    """The controller faults of a run with its own quorum (none for scenarios without them)."""
    if scenario not in ("controller-failover", "chaos"):
        return ()
    rng = random.Random(f"{seed}:controller-faults:{scenario}")
    end = duration_s - TAIL_S
    faults: list[ControllerFault] = []
    kinds: list[str] = []
    now = timing.warmup_s + rng.uniform(0.0, 1.0)
    while True:
        if not kinds:
            kinds = rng.sample(CONTROLLER_FAULT_KINDS, len(CONTROLLER_FAULT_KINDS))
        fault = _controller_fault(rng, kinds.pop(0), now, quorum)
        if fault.at_s + fault.duration_s > end:
            return tuple(faults)
        faults.append(fault)
        now += fault.duration_s + _recovery_s(fault, quorum) + rng.uniform(0.5, 2.0)


def _controller_fault(rng: random.Random, kind: str, at: float, quorum: QuorumTiming) -> ControllerFault:
    pick = rng.randrange(1 << 16)
    if kind == "kill":
        return ControllerFault(at, kind, LEADER, pick, rng.uniform(0.5, 1.5) * quorum.fetch_timeout_s)
    target = LEADER if rng.random() < LEADER_CHANCE else FOLLOWER
    return ControllerFault(at, kind, target, pick, quorum.deposed_s + rng.uniform(0.5, 1.5))


def _recovery_s(fault: ControllerFault, quorum: QuorumTiming) -> float:
    """How long the quorum takes to be whole again after the fault ended (see the module rules)."""
    return RESTART_S if fault.kind == "kill" else quorum.fetch_timeout_s
