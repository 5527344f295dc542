"""`__cluster_metadata-0/quorum-state`: KRaft's election state, in Kafka's `QuorumStateData` JSON.

Kafka's `FileQuorumStateStore` writes one line of JSON (no trailing newline): the
`QuorumStateDataJsonConverter` view of the state at the file's version, plus `data_version`.
Kafka 3.9 writes version 0 while `kraft.version` is 0 (static voters, which is fencer's case:
its log carries no KRaftVersion record), version 1 once `kraft.version` is 1:

    v0: {"clusterId":"","leaderId":1,"leaderEpoch":14,"votedId":-1,"appliedOffset":0,
         "currentVoters":[{"voterId":1}],"data_version":0}
    v1: {"leaderId":1,"leaderEpoch":14,"votedId":-1,
         "votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}

(v1 drops clusterId, appliedOffset and currentVoters and adds votedDirectoryId.)

Rules:
- fencer writes version 0, as Kafka 3.9 does for its log: leaderId = its node id, leaderEpoch =
  the epoch its start-up LeaderChange opens, votedId -1, currentVoters = itself. Atomically:
  `quorum-state.tmp`, fsync, rename, fsync of the directory.
- Reading validates either version. A missing file is normal (fencer's older dirs, fresh
  dirs). A garbled one is only a warning naming the file, not a refusal as in Kafka: fencer's
  epoch comes from its log, never from this file, which it rewrites at the next epoch anyway.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .model import LogError
from .segments import write_text_atomically

QUORUM_STATE = "quorum-state"
WRITTEN_VERSION = 0


class QuorumStateError(ValueError):
    """A quorum-state file that is not valid QuorumStateData JSON."""


@dataclass(frozen=True, slots=True)
class QuorumState:
    """The fields of a quorum-state file that fencer uses."""

    leader_id: int
    leader_epoch: int
    voted_id: int
    data_version: int


def render(node_id: int, epoch: int) -> str:
    """The version-0 text Kafka 3.9 writes for a sole voter `node_id` leading `epoch`."""
    state = {
        "clusterId": "",
        "leaderId": node_id,
        "leaderEpoch": epoch,
        "votedId": -1,
        "appliedOffset": 0,
        "currentVoters": [{"voterId": node_id}],
        "data_version": WRITTEN_VERSION,
    }
    return json.dumps(state, separators=(",", ":"))


def render_election(leader_id: int, epoch: int, voted_id: int, voters: list[int]) -> str:
    """The version-0 text Kafka 3.9 writes for a static quorum's election state: the
    leader it knows (-1: none), the epoch, the vote it cast in it (-1: none), and the voters."""
    state = {
        "clusterId": "",
        "leaderId": leader_id,
        "leaderEpoch": epoch,
        "votedId": voted_id,
        "appliedOffset": 0,
        "currentVoters": [{"voterId": voter} for voter in sorted(voters)],
        "data_version": WRITTEN_VERSION,
    }
    return json.dumps(state, separators=(",", ":"))


def write_election(
    partition: Path, leader_id: int, epoch: int, voted_id: int, voters: list[int], *, fsync: bool
) -> Path:
    """Write a quorum member's election state atomically (before it votes or follows: Kafka's
    `QuorumState.durableTransitionTo`)."""
    return _write(partition, render_election(leader_id, epoch, voted_id, voters), fsync=fsync)


def _int(tree: dict[str, Any], key: str, default: int | None) -> int:
    value = tree.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise QuorumStateError(f"{key} is {value!r}, not an integer")
    return value


def parse(text: str) -> QuorumState:
    """The state in a quorum-state text (raises `QuorumStateError` unless valid v0 or v1)."""
    try:
        tree = json.loads(text)
    except ValueError as exc:
        raise QuorumStateError(f"not JSON: {exc}") from None
    if not isinstance(tree, dict):
        raise QuorumStateError("not a JSON object")
    if "data_version" not in tree:
        raise QuorumStateError("no data_version")
    version = _int(tree, "data_version", None)
    if version not in (0, 1):
        raise QuorumStateError(f"unknown data_version {version}")
    state = QuorumState(_int(tree, "leaderId", -1), _int(tree, "leaderEpoch", -1), _int(tree, "votedId", -1), version)
    if version == 0:
        voters = tree.get("currentVoters")
        if voters is not None and not (
            isinstance(voters, list) and all(isinstance(v, dict) and isinstance(v.get("voterId"), int) for v in voters)
        ):
            raise QuorumStateError(f'currentVoters is {voters!r}, not a list of {{"voterId": n}}')
    elif not isinstance(tree.get("votedDirectoryId", ""), str):
        raise QuorumStateError("votedDirectoryId is not a string")
    return state


def read_quorum_state(partition: Path, messages: list[str]) -> QuorumState | None:
    """The partition's quorum-state, or None when absent or invalid (a warning in `messages`)."""
    path = partition / QUORUM_STATE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        messages.append(f"warning: ignored {path}: cannot read it: {exc}")
        return None
    try:
        return parse(text)
    except QuorumStateError as exc:
        messages.append(f"warning: ignored {path}: {exc}; it is rewritten when the next epoch starts")
        return None


def write_quorum_state(partition: Path, node_id: int, epoch: int, *, fsync: bool) -> Path:
    """Write the partition's quorum-state for `node_id` leading `epoch`, atomically."""
    return _write(partition, render(node_id, epoch), fsync=fsync)


def _write(partition: Path, text: str, *, fsync: bool) -> Path:
    """The quorum-state file written atomically; a node that cannot write it is done (`LogError`:
    as fatal as a failed append, Kafka's `QuorumState.durableTransitionTo`)."""
    try:
        return write_text_atomically(partition, QUORUM_STATE, text, fsync=fsync)
    except OSError as exc:
        raise LogError(f"cannot write {partition / QUORUM_STATE}: {exc}") from None
