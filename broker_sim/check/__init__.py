"""The invariant checker: a controller's metadata log (read with `protocol`) and a run's journal -> violations.

`check(data_dir, journal)` is a pure function of the files and entries it is given; it never
imports `controller`, so it can judge any controller that writes Kafka's `__cluster_metadata`
format. It is a replay (`replay`, Kafka's `MetadataLoader`) publishing events to subscribers
(`events`, Kafka's `MetadataPublisher`), each a rule or a family of rules with its own findings:
`LogRules` (`rules`, `partition_rules`: the invariants at every log position; it owns the
replayed image, `state.Model`), `SnapshotRules` (`snapshot`), `JournalCheck` (`journal_rules`),
`Liveness` (`liveness`), `Delivery` (`delivery`), `Duties` (`duties`), `AdminProbeCheck`
(`admin_probe_rules`), `AnsweredStates` (`answered_states`), `AnswerCheck` (`answer_rules`)
and `Leadership` (`leadership`: its last
rule): the journal against the log, `Leadership` also the log per batch; `IncarnationRules`
(`incarnation`) and `ElectionOrder` (`election_order`): the log per registration, per election; `Resends` (`resend`):
the journal alone. Modules: `log` (reading segments and snapshots), `journal_plan` (the journal,
read once), `violations` (what is reported), `cli` (`python -m broker_sim check`), `quorum` and
`quorum_rules` (several data dirs, a controller quorum's: the committed log checked as here, and
the nodes' logs against each other).

Rules:
- A violation is a rule broken by the controller; a problem is a log that cannot be read to its
  end (corruption, a gap, an undecodable record, a corrupt snapshot). Either fails the check.
  Notes (an incomplete last batch, skipped record types) do not.
- The journal is read completely, once, before the log is opened (see `replay`).
- Each snapshot the replay passes is compared with the replayed state at its end offset, unless it
  ends inside an open metadata transaction (Kafka snapshots only between transactions:
  `transaction-framing`); no snapshot may hold a transaction marker (the same rule).
- A metadata transaction still open at the end of the log is not applied, and said in a note.
- The result merges the subscribers' findings in the order `subscribers` gives them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker_sim.journal import Entry

from .admin_probe_rules import AdminProbeCheck
from .answer_rules import AnswerCheck
from .answered_states import AnsweredStates
from .delivery import Delivery
from .duties import Duties
from .election_order import ElectionOrder
from .events import Subscriber, findings
from .incarnation import IncarnationRules
from .journal_rules import JournalCheck
from .leadership import Leadership
from .liveness import Liveness
from .log import CheckError, LogReader
from .replay import Replay
from .resend import Resends
from .rules import LogRules
from .snapshot import SnapshotRules
from .state import Model
from .violations import RULES, Violation, ViolationSink

__all__ = ["RULES", "CheckError", "CheckResult", "Violation", "check", "check_replay", "subscribers"]


@dataclass
class CheckResult:
    """What a check found. `violations` holds the first few of each rule; `violation_counts` all."""

    data_dir: Path
    violations: list[Violation]
    violation_counts: dict[str, int]
    problems: list[str]
    notes: list[str]
    counts: dict[str, int]  # what was checked: records, batches, brokers, topics, partitions, journal entries...
    start_offset: int = 0
    end_offset: int = 0
    unverifiable: dict[str, int] = field(default_factory=dict)  # journal entries the log could not judge

    @property
    def violation_total(self) -> int:
        return sum(self.violation_counts.values())

    @property
    def ok(self) -> bool:
        return not self.violation_counts and not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "data_dir": str(self.data_dir),
            "ok": self.ok,
            "violation_total": self.violation_total,
            "violation_counts": self.violation_counts,
            "violations": [violation.to_json() for violation in self.violations],
            "problems": self.problems,
            "notes": self.notes,
            "counts": self.counts,
            "unverifiable": self.unverifiable,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
        }


def check(data_dir: Path, journal: Iterable[Entry] | None = None) -> CheckResult:
    """Check the metadata log of `data_dir` (and, given, a run's journal); raises `CheckError` only
    when there is no log to check at all."""
    return check_replay(data_dir, journal)[0]


def check_replay(
    data_dir: Path,
    journal: Iterable[Entry] | None = None,
    *,
    extra: Sequence[Subscriber] = (),
    until: int | None = None,
) -> tuple[CheckResult, Replay]:
    """`check`, with `extra` subscribers hearing the same events (their findings stay theirs, out of
    the result) and the replay ended at `until` (a quorum's committed end offset); and the replay."""
    image = LogRules(Model(), ViolationSink())
    own = [image, *subscribers(image)]
    with LogReader(Path(data_dir)) as reader:
        replay = Replay(reader, image, [*own[1:], *extra], until=until)
        replay.run(journal if journal is not None else ())
    return _result(Path(data_dir), replay, own), replay


def subscribers(image: LogRules) -> list[Subscriber]:
    """The rule families of a check, besides `image` (the log's rules, which own the replayed state)."""
    return [
        SnapshotRules(image),
        JournalCheck(image),
        Liveness(image),
        Delivery(image),
        Duties(image),
        AdminProbeCheck(image),
        AnsweredStates(image),
        AnswerCheck(image),
        IncarnationRules(image),
        ElectionOrder(image),
        Leadership(image),
        Resends(image),
    ]


def _result(data_dir: Path, replay: Replay, own: Sequence[Subscriber]) -> CheckResult:
    reading, journal = replay.reading, replay.journal
    found = findings(own)
    notes = [*reading.notes, *replay.notes, *found.notes]
    notes.extend(f"skipped {count} record(s): {reason}" for reason, count in sorted(reading.skipped_types.items()))
    if reading.base_snapshot is not None:
        notes.append(
            f"the log starts at offset {reading.start_offset}: replayed from {reading.base_snapshot.path.name}"
        )
    counts = Counter(
        batches=reading.batches,
        segments=len(reading.segments),
        snapshots=len(reading.snapshots),
        journal_entries=journal.entries,
    )
    counts.update(found.counts)
    return CheckResult(
        data_dir=data_dir,
        violations=list(found.sink.kept),
        violation_counts=dict(found.sink.counts),
        problems=list(reading.problems) + journal.problems,
        notes=notes,
        counts=dict(counts),
        start_offset=reading.start_offset,
        end_offset=reading.end_offset,
        unverifiable=dict(found.unverifiable + journal.unidentified),
    )
