"""The journal's requests a correct controller must refuse, against the log and semantics.md:
stale replays, request probes, a leader's ISR probes, and answers that broke the protocol.

`RefusalChecks` is the part of `journal_rules.JournalCheck` that judges these entries, apart from
the acknowledgements and observations it judges against the partition states it captured; it
reads the state `JournalCheck` keeps (the plan, the log's history, what the replay reached) and
reports through its `violation`; the answers semantics.md names are in `probe_answers`.

Rules (ids in violations.RULES):
- StaleReplay accepted: a violation (`stale-replay-accepted`), with the controlled-shutdown flag it
  wrote where the log has one near it; a rejected stale ControlledShutdown whose flag appears in the
  log next to it, for a broker epoch the fleet never shut down, was applied all the same (checked
  only on a journal whose run finished, so that no ShutdownTracked can be missing).
- RequestProbe (a request the controller must refuse, `broker_sim/model/probes.py`): accepted is
  a violation (`probe-accepted`); refused with another error than semantics.md names for its kind
  and version (`wrong_probe_answer`) too (`probe-answer`). Probe (a leader's ISR expansion on a
  stale view): whether it was admitted is the log's to judge (isr-admission), but a refusal must be
  INELIGIBLE_REPLICA (v2+) / OPERATION_NOT_ATTEMPTED (v0-1), or a stale epoch's (`probe-answer`).
  An answer saying NOT_CONTROLLER at the top level judged nothing, and below it too except for
  "alter-partition-newer-epoch", whose partition's NOT_CONTROLLER (top level NONE) is row b's
  answer; no answer judges nothing either. The kinds whose right answer is NONE
  ("alter-partition-empty": NONE and no topic; "replica-state-no-op": NONE for the partition) are
  never journalled accepted: their errors are judged (`probe-answer`); that a no-op wrote nothing
  is not judged here (the checker's model keeps a replica's offline state, not its directory, so
  a rewrite of the same state shows only as a partition epoch, and another broker's change of the
  partition may fall in the same window): the log rules judge whatever was written
  (`offline-in-isr`, `offline-leader`, `partition-epoch`).
  An accepted "registration-duplicate" is judged against the log, since a correct controller
  accepts one from a broker it fenced meanwhile or whose session ran out: it is `probe-accepted`
  when the answer came within the session timeout of the heartbeat the probe relied on (so the
  controller had heard from the broker within it) and the log fenced the sender's epoch nowhere
  between that heartbeat (less `HEARD_SLACK_MS`: a fence before a heartbeat answered unfenced was
  undone) and the probe's RegisterBrokerRecord (found by its incarnation id); a log that starts at
  a snapshot or was not read whole leaves it unverifiable.
- BadAnswer: a violation (`bad-answer`).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from broker_sim.journal import BadAnswer, Entry, Probe, RequestProbe, RunEnded, StaleReplay
from protocol.error_codes import ErrorCode

from .journal_plan import JournalPlan
from .liveness import NS_PER_MS
from .probe_answers import (
    DUPLICATE_REGISTRATION_PROBE,
    NEWER_EPOCH_PROBE,
    wrong_isr_probe_answer,
    wrong_probe_answer,
    wrong_stale_answer,
)
from .rules import BrokerEvent, History

APPLIED_WINDOW_NS = 2_000 * NS_PER_MS  # a stale replay's effect is looked for this close to it
HEARD_SLACK_MS = 1_000  # fences this long before the heartbeat a duplicate registration relied on count too


class RefusalChecks:
    """Judges the journal's stale replays, probes and bad answers (a part of `JournalCheck`, which
    holds the state declared here)."""

    history: History
    plan: JournalPlan
    log_is_whole: bool  # read from offset 0 to the end without a problem
    log_complete: bool  # no problem stopped the reading early
    checked: Counter[str]
    _unverifiable: Counter[str]
    shutdowns_started: dict[tuple[int, int], int]  # (broker, epoch) -> first start

    if TYPE_CHECKING:

        def violation(
            self, rule: str, message: str, entry: Entry, offset: int | None = None, **where: object
        ) -> None: ...

    # ------------------------------------------------------------------ stale replays and bad answers
    def stale_replay(self, entry: StaleReplay) -> None:
        self.checked["stale_replay"] += 1
        nearby = self._shutdown_flags_near(entry)
        records = tuple(event.rendering for event in nearby[:1])
        offset = nearby[0].offset if nearby else None
        if entry.accepted:
            self.violation(
                "stale-replay-accepted",
                f"{entry.api} v{entry.api_version} ({entry.reason}) built with broker epoch "
                f"{entry.stale_broker_epoch} was accepted (errors {entry.errors}) "
                f"by the incarnation of epoch {entry.current_broker_epoch}",
                entry,
                offset,
                broker=entry.broker,
                records=records,
            )
        elif (wrong := wrong_stale_answer(entry)) is not None:
            self.violation(
                "stale-replay-answer",
                f"{entry.api} v{entry.api_version} ({entry.reason}) built with broker epoch "
                f"{entry.stale_broker_epoch} was answered {entry.errors}: {wrong}",
                entry,
                broker=entry.broker,
            )
        elif nearby and self._run_finished() and not self._shutdown_started(entry):
            self.violation(
                "stale-replay-accepted",
                f"{entry.api} ({entry.reason}) was answered {entry.errors}, yet the log flags the incarnation "
                f"of epoch {entry.current_broker_epoch} in controlled shutdown next to it, "
                "and the fleet never shut it down",
                entry,
                offset,
                broker=entry.broker,
                records=records,
            )

    def _shutdown_flags_near(self, entry: StaleReplay) -> list[BrokerEvent]:
        if entry.api != "ControlledShutdown":
            return []
        events = self.history.shutdowns.get((entry.broker, entry.current_broker_epoch), [])
        return [event for event in events if abs(event.timestamp_ms * NS_PER_MS - entry.wall_ns) <= APPLIED_WINDOW_NS]

    def _run_finished(self) -> bool:
        return any(isinstance(e, RunEnded) and e.finished for e in self.plan.lifecycle)

    def _shutdown_started(self, entry: StaleReplay) -> bool:
        started = self.shutdowns_started.get((entry.broker, entry.current_broker_epoch))
        return started is not None and started <= entry.wall_ns + APPLIED_WINDOW_NS

    # ------------------------------------------------------------------ probes
    def request_probe(self, entry: RequestProbe) -> None:
        if not entry.errors or entry.errors[0] == ErrorCode.NOT_CONTROLLER:
            return
        if entry.probe != NEWER_EPOCH_PROBE and ErrorCode.NOT_CONTROLLER in entry.errors:
            return
        named = _probe_named(entry)
        if entry.accepted and entry.probe == DUPLICATE_REGISTRATION_PROBE:
            self._accepted_duplicate(entry, named)
            return
        self.checked["request_probe"] += 1
        if entry.accepted:
            self.violation(
                "probe-accepted",
                f"{entry.api} v{entry.api_version} probe {entry.probe} ({named}) was accepted (errors {entry.errors})",
                entry,
                broker=entry.broker,
            )
        elif (wrong := wrong_probe_answer(entry)) is not None:
            self.violation(
                "probe-answer",
                f"{entry.api} v{entry.api_version} probe {entry.probe} ({named}) was answered {entry.errors}: {wrong}",
                entry,
                broker=entry.broker,
            )

    def _accepted_duplicate(self, entry: RequestProbe, named: str) -> None:
        """See the module rules: a correct controller accepts another incarnation only once the
        sender's session is gone (fenced first, or not heard from within the session timeout)."""
        after = entry.detail.get("answered_ms_after_heard")
        timeout = entry.detail.get("session_timeout_ms")
        if not isinstance(after, int) or not isinstance(timeout, int) or after >= timeout:
            self._unverifiable["request_probe"] += 1
            return
        incarnation = str(entry.detail.get("incarnation_id", "")).lower()
        offsets = [
            offset
            for (broker, _), (found, offset) in self.history.registrations.items()
            if broker == entry.broker and found == incarnation and offset is not None
        ]
        heard_ms = entry.wall_ns // NS_PER_MS - after - HEARD_SLACK_MS  # a fence before it was undone since
        fences = [
            event.offset
            for event in self.history.fences.get((entry.broker, entry.broker_epoch), [])
            if event.timestamp_ms >= heard_ms
        ]
        at = min(offsets) if offsets else None
        if any(at is None or offset < at for offset in fences):
            self.checked["request_probe"] += 1  # fenced first: accepted rightly
            return
        if not (self.log_complete and self.log_is_whole):
            self._unverifiable["request_probe"] += 1
            return
        self.checked["request_probe"] += 1
        where = "no RegisterBrokerRecord of it" if at is None else f"its RegisterBrokerRecord at offset {at}"
        self.violation(
            "probe-accepted",
            f"{entry.api} v{entry.api_version} probe {entry.probe} ({named}) was accepted {after} ms after the "
            f"broker's last heartbeat was sent (session timeout {timeout} ms), and the log has {where} "
            f"with no fence of broker epoch {entry.broker_epoch} before it: another incarnation while "
            "the current one's session was valid",
            entry,
            at,
            broker=entry.broker,
        )

    def isr_probe(self, entry: Probe) -> None:
        if len(entry.errors) < 2 or ErrorCode.NOT_CONTROLLER in entry.errors:
            return
        self.checked["probe"] += 1
        wrong = wrong_isr_probe_answer(entry.api_version, entry.errors)
        if wrong is not None:
            self.violation(
                "probe-answer",
                f"AlterPartition v{entry.api_version} adding follower {entry.follower} ({entry.why}, broker epoch "
                f"{entry.member_epoch}) was answered {entry.errors}: {wrong}",
                entry,
                broker=entry.broker,
            )

    def bad_answer(self, entry: BadAnswer) -> None:
        self.checked["bad_answer"] += 1
        self.violation(
            "bad-answer",
            f"{entry.api} v{entry.api_version} (correlation id {entry.correlation_id}): {entry.reason}",
            entry,
            broker=entry.broker,
        )


def _probe_named(entry: RequestProbe) -> str:
    """What the probe's request named, on one line."""
    return ", ".join(f"{key} {value}" for key, value in entry.detail.items()) or "as built"
