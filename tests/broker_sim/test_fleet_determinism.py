"""Acceptance 3: two runs with the same seed against fresh controllers send the same requests per broker.

What is compared (steady scenario, where only the fleet changes partitions): every request the
fleet sent, read back from its capture, decoded with `protocol`, grouped by client id (one
lifecycle and one data connection per broker, and the admin), after normalising what the
controller assigns or the clock decides:
- broker epochs become "<broker>#<incarnation>" (from the journal's registrations), a heartbeat's
  metadata offset becomes its distance from the broker's epoch, topic ids become topic names (from
  the journal), the cluster id becomes "cluster", a listener's port "port" (the OS picks it);
  correlation ids and times are not compared;
- on a lifecycle connection, runs of identical heartbeats count once: how many heartbeats fit in
  a run depends on the wall clock, what they carry does not;
- the run ends on the wall clock, so one run may have sent a few more requests at its very end:
  the shorter sequence of each connection must be a prefix of the longer (and the data sequences
  must hold several AlterPartitions, so the comparison is not empty);
- a data connection may part from the other run at one kind of request only: an AlterPartition
  that differs in nothing but its ISR's members. Which follower a leader finds caught up depends
  on whether that follower has heard its LeaderAndIsr from the controller yet, and the
  controller's delivery is timed by the wall clock of a loaded machine (in a full suite a
  follower's LeaderAndIsr can take longer than the leader's 2 s lag limit). After such a request
  the two runs' ISRs differ, so the rest of that connection is not compared.
Everything else (incarnation ids, versions, member epochs, topics and their assignments, each
heartbeat's content) must be equal. The simulator, where the controller's timing is the seed's
too, holds the whole run, ISR decisions included, byte for byte
(tests/broker_sim/sim/test_sim.py::test_the_same_seed_writes_the_same_bytes).
"""

from __future__ import annotations

import uuid
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import trio

from broker_sim.journal import Registered, TopicCreated
from broker_sim.model.requests import Proposal, alter_partition
from protocol.capture import OUTBOUND
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.registry import decode_request

from .fleet_runs import FleetRun, run_against_daemon

Sequences = dict[str, list[Any]]
TOPIC = uuid.UUID(int=5)


def normalise(value: Any, epochs: dict[int, str], topics: dict[uuid.UUID, str], name: str = "") -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        out = {f.name: normalise(getattr(value, f.name), epochs, topics, f.name) for f in fields(value)}
        return (type(value).__name__, tuple(sorted(out.items())))
    if isinstance(value, tuple):
        return tuple(normalise(item, epochs, topics, name) for item in value)
    if isinstance(value, uuid.UUID):
        return topics.get(value, value)
    if name == "cluster_id":
        return "cluster"
    if name == "port":  # the listener's, picked by the OS
        return "port"
    if name in ("broker_epoch", "previous_broker_epoch") and isinstance(value, int) and value >= 0:
        return epochs.get(value, "unknown epoch")
    return value


def request_sequences(run: FleetRun) -> Sequences:
    epochs: dict[int, str] = {}
    incarnations: dict[int, int] = {}
    for entry in run.kinds("registered"):
        assert isinstance(entry, Registered)
        incarnations[entry.broker] = incarnations.get(entry.broker, 0) + 1
        epochs[entry.broker_epoch] = f"{entry.broker}#{incarnations[entry.broker]}"
    topics = {uuid.UUID(e.topic_id): e.topic for e in run.kinds("topic_created") if isinstance(e, TopicCreated)}
    table = pq.read_table(run.directory / "capture").to_pylist()
    rows = sorted((row for row in table if row["direction"] == OUTBOUND), key=lambda row: row["request_time_ns"])
    sequences: Sequences = {}
    for row in rows:
        request = decode_request(row["request"])
        body = request.body
        client = request.header.client_id or f"broker-{getattr(body, 'broker_id', '?')}-data"
        if isinstance(body, BrokerHeartbeatRequest):  # its offset relative to its epoch
            body = replace(body, current_metadata_offset=body.current_metadata_offset - body.broker_epoch)
        item = (request.api_key, request.api_version, normalise(body, epochs, topics))
        if request.api_key == 63 and sequences.get(client) and sequences[client][-1] == item:
            continue
        sequences.setdefault(client, []).append(item)
    return sequences


ISR_FIELDS = ("new_isr", "new_isr_with_epochs")


def without_isr(value: Any) -> Any:
    """A normalised request with every ISR's members left out."""
    if isinstance(value, tuple):
        kept = (item for item in value if not (isinstance(item, tuple) and len(item) == 2 and item[0] in ISR_FIELDS))
        return tuple(without_isr(item) for item in kept)
    return value


def parts_at_an_isr(client: str, one: Any, other: Any) -> bool:
    """Whether two requests of a data connection differ only in their ISR's members."""
    return client.endswith("-data") and one[0] == other[0] == 56 and without_isr(one) == without_isr(other)


def parting(shorter: list[Any], longer: list[Any]) -> int:
    """The index of the first request where two sequences differ (the shorter's length if none does)."""
    return next((i for i, (a, b) in enumerate(zip(shorter, longer, strict=False)) if a != b), len(shorter))


def diverged(client: str, shorter: list[Any], longer: list[Any], index: int) -> str:
    """Where two sequences part, in full (a wall-clock run's divergence is rare: what differed)."""
    return f"{client} diverged at request {index}:\n  one:   {shorter[index]!r}\n  other: {longer[index]!r}"


async def side_by_side(tmp_path: Path, seeds: dict[str, int], duration_s: float) -> dict[str, Sequences]:
    """One steady run per name, each against its own fresh daemon, at the same time."""
    runs: dict[str, Sequences] = {}

    async def run(name: str, seed: int) -> None:
        runs[name] = request_sequences(await run_against_daemon(tmp_path / name, "steady", seed, duration_s))

    async with trio.open_nursery() as nursery:
        for name, seed in seeds.items():
            nursery.start_soon(run, name, seed)
    return runs


@pytest.mark.slow
async def test_two_runs_with_the_same_seed_send_the_same_requests_per_broker(tmp_path: Path) -> None:
    runs = await side_by_side(tmp_path, {"first": 11, "second": 11}, duration_s=14.0)
    first, second = runs["first"], runs["second"]
    assert set(first) == set(second)
    assert {f"broker-{b}-lifecycle" for b in range(5)} | {"fleet-admin"} <= set(first)
    alter_partitions = 0
    for client in sorted(first):
        shorter, longer = sorted((first[client], second[client]), key=len)
        common = parting(shorter, longer)
        if common < len(shorter):
            assert parts_at_an_isr(client, shorter[common], longer[common]), diverged(client, shorter, longer, common)
        else:
            assert len(longer) - len(shorter) <= 2, f"{client}: more than the end of a run differs"
        alter_partitions += sum(1 for item in shorter[:common] if item[0] == 56)
    assert alter_partitions >= 3


async def test_another_seed_sends_other_requests(tmp_path: Path) -> None:
    runs = await side_by_side(tmp_path, {"first": 11, "other": 12}, duration_s=6.0)
    first, other = runs["first"], runs["other"]
    assert first["broker-0-lifecycle"][:3] != other["broker-0-lifecycle"][:3]  # incarnation ids, versions


def test_a_data_connection_may_part_only_at_an_isrs_members() -> None:
    def request(isr: tuple[int, ...], partition_epoch: int = 0) -> Any:
        proposal = Proposal("t", TOPIC, 1, 0, partition_epoch, isr, isr)
        body = alter_partition(3, 4, 7, [proposal])
        return (56, 3, normalise(body, {7: "4#1"}, {TOPIC: "t"}))

    assert parts_at_an_isr("broker-4-data", request((4, 3)), request((4, 2)))
    assert not parts_at_an_isr("broker-4-data", request((4, 3)), request((4, 3), partition_epoch=1))
    assert not parts_at_an_isr("broker-4-lifecycle", request((4, 3)), request((4, 2)))
