"""The run's journal: what the fleet saw, as JSON lines, for the invariant checker.

Purpose: the checker judges a controller from two sources: its metadata log (the only truth about
what was committed) and this journal (what the controller told the brokers, and what the fleet did
on purpose). A run writes one journal beside its report; `python -m broker_sim check DATA_DIR
--journal PATH` reads it back. The format is the contract between the fleet (writer) and the
checker (reader); both use only this package for it, which holds the entry kinds by subject
(`lifecycle`, `answers`, `probes`, `control`, `quorum`) and the format (`codec`), and names them
all here.

Rules:
- One JSON object per line, with a `kind` naming the entry type below; unknown kinds are skipped
  by readers (newer writers, older readers). A truncated last line (a crashed run) is ignored.
  So the format grows by new kinds, never by changing what an existing kind's fields mean
  (`controller_switch`, `control_refused` and `controller_epoch` came with controller failover,
  and `controller_fault`, `quorum_leader` and `failover` with the fleet's own quorum, `--quorum`,
  then `quorum`, `quorum_leaders`, `vote_probe` and `control_sender`, then `stop_observed` and
  `leader_and_isr_observed` with the brokers' side of the control duties: a reader that predates
  them skips them; then `admin_probe`, the admin client's requests a correct controller must
  refuse; then `unfenced`, `delete_answer` and `create_answer`, the brokers' unfencings and the
  admin's own deletions and creations). A kind may also gain a field with a default that means
  "not recorded" (`control_refused`'s `digest` and `connection`, and `run`'s `journals_states`,
  `delivery_bound_ms` and `silence_slack_ms`):
  older readers ignore it, newer ones read an older line as not recording it.
- Times are wall-clock nanoseconds (`time.time_ns()` of the shell), so that entries of several
  fleet processes and the log's batch timestamps can be put on one timeline.
- Topic ids are the canonical UUID string. Lists of broker ids keep the order the wire had.
- Entries are facts the fleet observed, never conclusions: the checker decides what is a violation.
"""

from __future__ import annotations

from .answers import (
    BadAnswer,
    CreateAnswered,
    DeleteAnswered,
    ElectAnswered,
    PartitionAcked,
    ReplicaStateAnswered,
    TopicCreated,
)
from .codec import ENTRY_TYPES, Entry, JournalError, JournalWriter, field_names, from_object, read_journal, to_line
from .control import (
    ControllerEpochSeen,
    ControllerSwitched,
    ControlRefused,
    ControlSenderSeen,
    LeaderAndIsrObserved,
    StateObserved,
    StopObserved,
)
from .lifecycle import FaultInjected, Fenced, Registered, RunEnded, RunStarted, ShutdownTracked, UnfencedSeen
from .probes import AdminProbe, Probe, RequestProbe, StaleReplay
from .quorum import ControllerFaulted, FailoverMeasured, QuorumLeaderSeen, QuorumLeadersSeen, QuorumStarted, VoteProbed

__all__ = [
    "ENTRY_TYPES",
    "AdminProbe",
    "BadAnswer",
    "ControlRefused",
    "ControlSenderSeen",
    "ControllerEpochSeen",
    "ControllerFaulted",
    "ControllerSwitched",
    "CreateAnswered",
    "DeleteAnswered",
    "ElectAnswered",
    "Entry",
    "FailoverMeasured",
    "FaultInjected",
    "Fenced",
    "JournalError",
    "JournalWriter",
    "LeaderAndIsrObserved",
    "PartitionAcked",
    "Probe",
    "QuorumLeaderSeen",
    "QuorumLeadersSeen",
    "QuorumStarted",
    "Registered",
    "ReplicaStateAnswered",
    "RequestProbe",
    "RunEnded",
    "RunStarted",
    "ShutdownTracked",
    "StaleReplay",
    "StateObserved",
    "StopObserved",
    "TopicCreated",
    "UnfencedSeen",
    "VoteProbed",
    "field_names",
    "from_object",
    "read_journal",
    "to_line",
]
