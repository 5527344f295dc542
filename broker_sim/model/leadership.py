"""The leader's side of the ISR: which partitions the broker leads, when it shrinks or expands an
ISR through AlterPartition, and how it reacts to every answer, as Kafka's broker does.

Rules:
- What the broker leads comes only from its listener's views (`sync`): a hosted view naming the
  broker as leader. A view with a newer (leader epoch, partition epoch) replaces the leader's
  state; a view naming another leader (or none) with a newer leader epoch, or a stopped or deleted
  view, ends the leadership (`sync` returns the deposed states, for KIP-497 replays).
- `decide(t)` (once per tick, t the tick's logical time): for each led partition not waiting,
  a follower in the ISR that has not been caught up for more than `lag_max_s` is removed; a
  follower out of the ISR that is caught up and eligible (alive, unfenced, not shutting down, its
  replica online: KIP-841) is added at the end. A RECOVERING partition first reports RECOVERED.
  At most one change per partition is in flight.
- Answers (`answered`), per partition: NONE -> the answered state is committed and adopted;
  INELIGIBLE_REPLICA / OPERATION_NOT_ATTEMPTED -> back to the last committed state (retry after a
  backoff); FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, NEW_LEADER_ELECTED, UNKNOWN_TOPIC_OR_PARTITION,
  UNKNOWN_TOPIC_ID -> wait for a newer LeaderAndIsr; NOT_CONTROLLER and network errors (`failed`)
  -> retry the same change with exponential backoff. Any other error goes back to the committed
  state with a backoff. Top level: STALE_BROKER_EPOCH waits for a newer LeaderAndIsr; NOT_CONTROLLER
  retries; anything else goes back with a backoff. A wait that sees no newer LeaderAndIsr within
  `lai_wait_s` ends (an update the controller could not deliver).
- Probes (`probe`, chaos only): an ISR expansion built on a stale view of a follower that the
  controller must refuse (KIP-841: a leader's metadata lags, so it re-adds a follower that is
  fenced, shutting down or offline; KIP-903: it names the broker epoch of the follower's previous
  incarnation, from a fetch that predates its bounce). It goes out and is answered like any other
  change of the partition (an INELIGIBLE_REPLICA goes back to the committed state).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import AlterPartitionResponse, AlterPartitionResponsePartitionData

from .requests import Proposal
from .timing import Timing
from .views import PartitionView

RECOVERED = 0
RECOVERING = 1
BACK_TO_COMMITTED = frozenset({ErrorCode.INELIGIBLE_REPLICA, ErrorCode.OPERATION_NOT_ATTEMPTED})
WAIT_FOR_UPDATE = frozenset(
    {
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.INVALID_UPDATE_VERSION,
        ErrorCode.NEW_LEADER_ELECTED,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
    }
)
RETRY = frozenset({ErrorCode.NOT_CONTROLLER})


class FollowerState(NamedTuple):
    caught_up: bool
    eligible: bool
    epoch: int  # its current broker epoch as the leader knows it from its fetches (-1: unknown)


class ProbeTarget(NamedTuple):
    """A follower the controller must not admit to an ISR, with the broker epoch a stale view names."""

    follower: int
    member_epoch: int
    why: str  # "fenced", "shutting-down", "offline", "previous-epoch"


class Followers(Protocol):
    """What a leader learns of its followers from their fetch requests (fed by the shell)."""

    def state(self, follower: int, topic: str, partition: int, t: float) -> FollowerState: ...

    def ineligible(self, follower: int, topic: str, partition: int, t: float) -> ProbeTarget | None:
        """The follower as a stale view would propose it, when the controller must refuse it."""
        ...


@dataclass(slots=True)
class Led:
    """A partition this broker leads: the last committed state it knows, and its pending work."""

    topic: str
    topic_id: uuid.UUID
    partition: int
    replicas: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    recovery_state: int
    #: the recovery state came from the controller (see `PartitionView.recovery_known`)
    recovery_known: bool = True
    last_caught_up: dict[int, float] = field(default_factory=dict)
    in_flight: bool = False
    waiting_since: float | None = None  # waiting for a LeaderAndIsr newer than the epochs above
    retry_at: float = 0.0
    failures: int = 0

    @property
    def epochs(self) -> tuple[int, int]:
        return (self.leader_epoch, self.partition_epoch)


class Acked(NamedTuple):
    """A proposal the controller answered NONE, with the state it answered."""

    proposal: Proposal
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]


class Leadership:
    def __init__(self, broker_id: int, timing: Timing) -> None:
        self.broker_id = broker_id
        self.timing = timing
        self.led: dict[tuple[str, int], Led] = {}

    # ------------------------------------------------------------------ views
    def sync(self, views: Iterable[PartitionView], t: float) -> list[Led]:
        """Adopt the listener's views; return the partitions whose leadership just ended."""
        deposed: list[Led] = []
        seen: set[tuple[str, int]] = set()
        for view in views:
            key = (view.topic_name, view.partition)
            seen.add(key)
            led = self.led.get(key)
            if view.hosted and view.leader == self.broker_id:
                if led is None:
                    self.led[key] = _led_from(view, t)
                elif (view.leader_epoch, view.partition_epoch) > led.epochs:
                    _adopt_view(led, view, t)
            elif led is not None and (not view.hosted or view.leader_epoch > led.leader_epoch):
                deposed.append(self.led.pop(key))
        for key in [key for key in self.led if key not in seen]:
            deposed.append(self.led.pop(key))
        return deposed

    # ------------------------------------------------------------------ decisions
    def decide(self, t: float, followers: Followers, own_epoch: int) -> list[Proposal]:
        proposals = []
        for led in self.led.values():
            if led.in_flight or t < led.retry_at:
                continue
            if led.waiting_since is not None:
                if t - led.waiting_since < self.timing.lai_wait_s:
                    continue
                led.waiting_since = None
            proposal = self._decide_one(led, t, followers, own_epoch)
            if proposal is not None:
                led.in_flight = True
                proposals.append(proposal)
        return proposals

    def _decide_one(self, led: Led, t: float, followers: Followers, own_epoch: int) -> Proposal | None:
        isr = list(led.isr)
        epochs = {self.broker_id: own_epoch}
        for follower in led.replicas:
            if follower == self.broker_id:
                continue
            state = followers.state(follower, led.topic, led.partition, t)
            epochs[follower] = state.epoch
            if state.caught_up:
                led.last_caught_up[follower] = t
            if follower in isr:
                if t - led.last_caught_up.setdefault(follower, t) > self.timing.lag_max_s:
                    isr.remove(follower)
            elif state.caught_up and state.eligible:
                isr.append(follower)
        if tuple(isr) == led.isr and led.recovery_state == RECOVERED:
            return None
        new_isr = tuple(isr) if led.recovery_state == RECOVERED else led.isr
        return _proposal(led, new_isr, epochs, RECOVERED)

    def probe(
        self, t: float, followers: Followers, own_epoch: int, member_epochs: bool
    ) -> tuple[Proposal, ProbeTarget] | None:
        """The first led partition (in key order) that is idle and has a follower out of its ISR that
        the controller must refuse: a change adding that follower (marked in flight). Without
        `member_epochs` (AlterPartition before v3) a previous epoch cannot be named, so is no probe."""
        for key in sorted(self.led):
            led = self.led[key]
            if led.in_flight or t < led.retry_at or led.waiting_since is not None or led.recovery_state != RECOVERED:
                continue
            for follower in led.replicas:
                if follower == self.broker_id or follower in led.isr:
                    continue
                target = followers.ineligible(follower, led.topic, led.partition, t)
                if target is None or (target.why == "previous-epoch" and not member_epochs):
                    continue
                isr = (*led.isr, follower)
                epochs = {m: followers.state(m, led.topic, led.partition, t).epoch for m in led.isr}
                epochs[self.broker_id] = own_epoch
                epochs[follower] = target.member_epoch
                led.in_flight = True
                return _proposal(led, isr, epochs, RECOVERED), target
        return None

    def successors_ready(self, followers: Followers, t: float, excluded: frozenset[int]) -> bool:
        """Every led partition with other replicas has another ISR member outside `excluded` that could
        take over: eligible and caught up (its replica online and fetching)."""
        for led in self.led.values():
            if len(led.replicas) > 1 and not any(
                member != self.broker_id
                and member not in excluded
                and _can_take_over(followers.state(member, led.topic, led.partition, t))
                for member in led.isr
            ):
                return False
        return True

    def proposal_for_replay(self, led: Led, followers: Followers, own_epoch: int, t: float) -> Proposal:
        """An ISR change built on `led`'s epochs: drop the last follower, or add a missing one."""
        others = [r for r in led.isr if r != self.broker_id]
        if others:
            isr = tuple(r for r in led.isr if r != others[-1])
        else:
            missing = [r for r in led.replicas if r not in led.isr]
            isr = led.isr + tuple(missing[:1])
        epochs = {r: followers.state(r, led.topic, led.partition, t).epoch for r in isr if r != self.broker_id}
        epochs[self.broker_id] = own_epoch
        return _proposal(led, isr, epochs, led.recovery_state)

    # ------------------------------------------------------------------ answers
    def answered(
        self, proposals: Sequence[Proposal], response: AlterPartitionResponse, version: int, t: float
    ) -> tuple[list[Acked], list[Proposal]]:
        """Apply an answer; (the acknowledged proposals, the proposals the answer did not mention)."""
        if response.error_code != ErrorCode.NONE:
            for proposal in proposals:
                self._react(proposal, response.error_code, t)
            return [], []
        answers = _answers_by_partition(response, version)
        acked: list[Acked] = []
        missing: list[Proposal] = []
        for proposal in proposals:
            answer = answers.get((proposal.topic_id if version >= 2 else proposal.topic, proposal.partition))
            if answer is None:
                missing.append(proposal)
                self.failed([proposal], t)
            elif answer.error_code == ErrorCode.NONE:
                acked.append(self._commit(proposal, answer, version))
            else:
                self._react(proposal, answer.error_code, t)
        return acked, missing

    def failed(self, proposals: Sequence[Proposal], t: float) -> None:
        """No answer (network error, timeout, a bad answer): retry the same change with backoff."""
        for proposal in proposals:
            led = self.led.get((proposal.topic, proposal.partition))
            if led is not None:
                led.in_flight = False
                led.failures += 1
                led.retry_at = t + self.timing.backoff(led.failures)

    def _commit(self, proposal: Proposal, answer: AlterPartitionResponsePartitionData, version: int) -> Acked:
        acked = Acked(proposal, answer.leader_id, answer.leader_epoch, answer.partition_epoch, tuple(answer.isr))
        led = self.led.get((proposal.topic, proposal.partition))
        if led is None:
            return acked
        led.in_flight = False
        led.failures = 0
        if (answer.leader_epoch, answer.partition_epoch) >= led.epochs:
            led.leader_epoch, led.partition_epoch = answer.leader_epoch, answer.partition_epoch
            led.isr = acked.isr
            led.recovery_state = answer.leader_recovery_state
            led.recovery_known = version >= 1  # AlterPartition v0 answers without it
        return acked

    def _react(self, proposal: Proposal, error: int, t: float) -> None:
        led = self.led.get((proposal.topic, proposal.partition))
        if led is None:
            return
        led.in_flight = False
        if error in RETRY:
            led.failures += 1
            led.retry_at = t + self.timing.backoff(led.failures)
        elif error in WAIT_FOR_UPDATE or error == ErrorCode.STALE_BROKER_EPOCH:
            led.waiting_since = t
        else:  # BACK_TO_COMMITTED and anything unexpected: keep the committed state, try later
            led.failures += 1
            led.retry_at = t + self.timing.backoff(led.failures)


def _proposal(led: Led, isr: tuple[int, ...], epochs: dict[int, int], recovery_state: int) -> Proposal:
    """A change of `led` to `isr`, built on its epochs, naming each member's broker epoch (-1: unknown)."""
    return Proposal(
        topic=led.topic,
        topic_id=led.topic_id,
        partition=led.partition,
        leader_epoch=led.leader_epoch,
        partition_epoch=led.partition_epoch,
        isr=isr,
        member_epochs=tuple(epochs.get(member, -1) for member in isr),
        recovery_state=recovery_state,
    )


def _can_take_over(state: FollowerState) -> bool:
    """Eligible, and its replica fetching (caught up: so neither offline nor stopped)."""
    return state.eligible and state.caught_up


def _led_from(view: PartitionView, t: float) -> Led:
    return Led(
        topic=view.topic_name,
        topic_id=view.topic_id,
        partition=view.partition,
        replicas=view.replicas,
        leader_epoch=view.leader_epoch,
        partition_epoch=view.partition_epoch,
        isr=view.isr,
        recovery_state=view.leader_recovery_state,
        recovery_known=view.recovery_known,
        last_caught_up={replica: t for replica in view.replicas},
    )


def _adopt_view(led: Led, view: PartitionView, t: float) -> None:
    led.leader_epoch, led.partition_epoch = view.leader_epoch, view.partition_epoch
    led.isr, led.replicas, led.recovery_state = view.isr, view.replicas, view.leader_recovery_state
    led.recovery_known = view.recovery_known
    if view.topic_id.int:
        led.topic_id = view.topic_id
    led.waiting_since = None
    for replica in view.replicas:
        led.last_caught_up.setdefault(replica, t)


def _answers_by_partition(
    response: AlterPartitionResponse, version: int
) -> dict[tuple[object, int], AlterPartitionResponsePartitionData]:
    out: dict[tuple[object, int], AlterPartitionResponsePartitionData] = {}
    for topic in response.topics:
        name: object = topic.topic_id if version >= 2 else topic.topic_name
        for partition in topic.partitions:
            out[(name, partition.partition_index)] = partition
    return out
