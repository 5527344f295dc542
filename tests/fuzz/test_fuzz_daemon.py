"""A short run of the daemon fuzzer in the suite (the million-frame run is `make fuzz-daemon`),
every served API version's template, and the pieces: hostile values, frames, the checks."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import struct
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from protocol.api_keys import ApiKey
from protocol.messages import alter_partition as ap
from protocol.messages import broker_heartbeat as bh
from protocol.messages import create_topics as ct
from protocol.messages import vote as vo
from protocol.registry import decode_request, encode_request
from protocol.spec import ZERO_UUID
from tests.benchmarks.test_scripts import sized
from tests.e2e.daemon_process import ROOT

from .daemon import templates
from .daemon.checks import Finding, judge, refuses_everything, traceback_summary
from .daemon.context import BrokerView, Context, PartitionView, TopicView, context_from
from .daemon.frames import make_frame
from .daemon.observe import differences
from .daemon.runner import SetupRun, render
from .daemon.setups import SETUPS
from .daemon.values import fit, hostile_variant, slots
from .fuzz_daemon import main, split

SEED = 20261205
#: frames per set-up: about 2,800 in all, some 20 CPU seconds (daemons included) on 2 cores
FRAMES = 700


def sample_context() -> Context:
    topic = TopicView(
        "fz-a",
        uuid.UUID(int=7),
        (PartitionView(0, 11, 3, 5, (11, 12), (11, 12, 13)), PartitionView(1, 12, 0, 0, (12,), (12, 13, 11))),
    )
    return Context(
        node_id=1,
        voters=(1, 2, 3),
        cluster_id="FuzzQuorumAAAAAAAAAAAA",
        epoch=4,
        leader_id=1,
        log_end_offset=120,
        high_watermark=118,
        topics=(topic,),
        brokers=(BrokerView(11, 20, uuid.UUID(int=11), False), BrokerView(12, 25, uuid.UUID(int=12), False)),
        snapshots=((100, 4),),
        voter_ports={1: 9001, 2: 9002, 3: 9003},
        dead_port=9999,
    )


@pytest.mark.parametrize("setup", SETUPS)
def test_a_short_run_against_each_set_up_is_clean(setup: str, tmp_path: Path) -> None:
    run = SetupRun(setup, FRAMES, SEED, work=tmp_path, findings_file=tmp_path / "findings.jsonl", quiet=True)
    result = run.run()
    assert not result.findings, "\n\n".join(render(finding) for finding in result.symptoms.values())
    counts = result.counts
    assert counts["frames"] == FRAMES
    assert counts["answered"] + counts["closed"] == FRAMES
    # both outcomes happened: hostile values refused, valid ones (and some hostile ones) accepted
    assert counts["refused"] > FRAMES // 4 and counts["accepted"] > FRAMES // 20
    assert result.latencies, "the bystander never heartbeated"


def test_every_api_version_the_daemon_serves_has_a_template() -> None:
    assert templates.missing_templates(sample_context()) == []


def test_an_api_without_a_template_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(templates.TEMPLATES, ApiKey.VOTE)
    missing = templates.missing_templates(sample_context(), seeds=1)
    assert {(key, version) for key, version, _ in missing} == {(ApiKey.VOTE, v) for v in (0, 1, 2)}


def test_templates_name_the_metadata_partition_and_the_current_values() -> None:
    context = sample_context()
    fetch = templates.build(ApiKey.FETCH, context, 17, random.Random(1))
    assert fetch.topics[0].topic_id == uuid.UUID(int=1) and fetch.topics[0].partitions[0].partition == 0
    vote = templates.build(ApiKey.VOTE, context, 2, random.Random(1))
    part = vote.topics[0].partitions[0]
    assert vote.topics[0].topic_name == "__cluster_metadata" and part.partition_index == 0
    assert part.candidate_epoch == context.epoch + 1 and part.last_offset == context.log_end_offset
    alter = templates.build(ApiKey.ALTER_PARTITION, context, 3, random.Random(2))
    partition = alter.topics[0].partitions[0]
    assert alter.topics[0].topic_id == uuid.UUID(int=7)
    assert (partition.leader_epoch, partition.partition_epoch) in {(3, 5), (0, 0)}


def test_fit_resets_what_a_version_lacks() -> None:
    partition = ap.AlterPartitionRequestPartitionData(
        partition_index=0, leader_epoch=1, new_isr=(1, 2), partition_epoch=1, leader_recovery_state=1
    )
    topic = ap.AlterPartitionRequestTopicData(topic_name="t", topic_id=uuid.UUID(int=5), partitions=(partition,))
    fitted = fit(ap.AlterPartitionRequest(broker_id=1, topics=(topic,)), 0)
    assert fitted.topics[0].topic_id == ZERO_UUID and fitted.topics[0].partitions[0].leader_recovery_state == 0
    assert fitted.topics[0].partitions[0].new_isr == (1, 2)  # v0 has it: kept


def test_hostile_variants_encode_and_repeat_with_the_seed() -> None:
    context = sample_context()
    for key, version in templates.served():
        for seed in range(4):
            message = templates.build(key, context, version, random.Random(seed))
            first = hostile_variant(message, version, context, random.Random(seed), changes=3)
            again = hostile_variant(message, version, context, random.Random(seed), changes=3)
            assert first == again
            encode_request(first[0], version, correlation_id=1)  # hostile, yet well-formed


def test_hostile_values_are_the_edges() -> None:
    context = sample_context()
    message = templates.build(ApiKey.VOTE, context, 2, random.Random(1))
    epochs = set()
    for seed in range(1000):
        changed, done = hostile_variant(message, 2, context, random.Random(seed), changes=1)
        if done and done[0].startswith("topics.0.partitions.0.candidate_epoch="):
            epochs.add(changed.topics[0].partitions[0].candidate_epoch)
    assert {4, 5, 6, 1005, -1, 2**31 - 1} <= epochs  # around the template's 5 and the Raft epoch 4
    lists = {
        done[0].split("=", 1)[1].split(" ")[0]
        for seed in range(300)
        for _, done in [hostile_variant(message, 2, context, random.Random(seed), changes=1)]
        if done and done[0].startswith("topics=")
    }
    assert {"empty", "duplicated", "oversized"} <= lists


def test_slots_walk_a_long_list_only_at_its_ends() -> None:
    topic = ct.CreateTopicsRequestCreatableTopic(name="t", num_partitions=1, replication_factor=1)
    message = ct.CreateTopicsRequest(topics=(topic,) * 1000)
    walked = {slot.path[1] for slot in slots(message, 7) if len(slot.path) > 1}
    assert walked == {0, 1, 2, 3, 4, 999}


def test_frames_repeat_with_the_seed_and_keep_their_size_prefix_honest() -> None:
    context = sample_context()
    first = [make_frame(context, random.Random(9), 5) for _ in range(1)]
    rng_a, rng_b = random.Random(11), random.Random(11)
    frames = [make_frame(context, rng_a, index) for index in range(400)]
    assert frames == [make_frame(context, rng_b, index) for index in range(400)]
    assert first == [make_frame(context, random.Random(9), 5)]
    for frame in frames:
        (size,) = struct.unpack(">i", frame.data[:4])
        assert frame.forged_size or size == len(frame.payload)
        if frame.well_formed:
            decode_request(frame.payload)  # the daemon decodes it too
    assert sum(frame.well_formed for frame in frames) > 250
    assert any(frame.forged_size for frame in frames) and any(not frame.well_formed for frame in frames)


def test_frames_of_a_node_at_the_last_epoch_still_encode() -> None:
    """A node whose epoch is int32 max (an accepted request may put it there): the templates' "next
    epoch" and hostile "+1" values stay in range, and nothing fails to encode."""
    context = dataclasses.replace(sample_context(), epoch=2**31 - 1)
    rng = random.Random(5)
    frames = [make_frame(context, rng, index) for index in range(600)]
    assert any(frame.api_key == ApiKey.VOTE for frame in frames)


def test_refused_means_every_error_code_refuses() -> None:
    part = ap.AlterPartitionResponsePartitionData(partition_index=0, error_code=0, leader_id=1, leader_epoch=0)
    refused = dataclasses.replace(part, error_code=3)
    topic = ap.AlterPartitionResponseTopicData

    def answer(*parts: ap.AlterPartitionResponsePartitionData, error: int = 0) -> ap.AlterPartitionResponse:
        return ap.AlterPartitionResponse(error_code=error, topics=(topic(partitions=parts),))

    assert refuses_everything(answer(error=31))
    assert refuses_everything(answer(refused, refused))
    assert not refuses_everything(answer(refused, part))
    assert not refuses_everything(answer())  # nothing refused
    assert not refuses_everything(vo.VoteResponse(topics=()))


def test_judge_reads_the_answer_of_the_frame() -> None:
    request = bh.BrokerHeartbeatRequest(broker_id=11, broker_epoch=3)
    frame = make_frame(sample_context(), random.Random(1), 1)
    heartbeat = dataclasses.replace(
        frame, data=encode_request(request, 1, 77), api_key=ApiKey.BROKER_HEARTBEAT, version=1, correlation_id=77
    )
    from protocol.registry import encode_response

    stale = encode_response(bh.BrokerHeartbeatResponse(error_code=77), 1, 77)[4:]
    assert judge(heartbeat, "answered", stale).refused is True
    fine = encode_response(bh.BrokerHeartbeatResponse(), 1, 77)[4:]
    assert judge(heartbeat, "answered", fine).refused is False
    other = encode_response(bh.BrokerHeartbeatResponse(), 1, 78)[4:]
    assert judge(heartbeat, "answered", other).problem is not None  # another correlation id
    assert judge(heartbeat, "answered", b"\x00\x00\x00\x4d\xff").problem is not None  # garbled
    assert judge(heartbeat, "closed", None).refused is True


def test_findings_of_one_bug_share_a_symptom() -> None:
    def finding(what: str, detail: str, summary: str = "Vote v2: x=1") -> Finding:
        return Finding("single", 1, 3, "00", summary, what, detail)

    assert (
        finding("exit", "node 1 exited with code 1 after RaftError: epoch 5 (in maybe_transition)").symptom
        == finding("exit", "node 2 exited with code 1 after RaftError: epoch 1021 (in maybe_transition)").symptom
    )
    one = finding("refused-change", "state.quorum.epoch: 1 -> 2; describe_quorum.x-0.voters[0][2]: 3 -> 4")
    two = finding("refused-change", "state.quorum.voted_id: 1 -> 7", "Vote v0: y=2")
    assert one.symptom == "refused-change: Vote: describe_quorum, state.quorum"
    assert two.symptom == "refused-change: Vote: state.quorum"


def test_traceback_summary_finds_the_exception_inside_a_group() -> None:
    text = """2026 ERROR fencer: boom
  + Exception Group Traceback (most recent call last):
  |   File "a.py", line 3, in run
  | ExceptionGroup: Exceptions from Trio nursery (1 sub-exception)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "raft/node.py", line 9, in maybe_transition
    |     raise RaftError(f"leader {leader}")
    | controller.raft.state.RaftError: leader 1 of epoch 9
    +------------------------------------
"""
    assert traceback_summary(text) == "controller.raft.state.RaftError: leader 1 of epoch 9 (in maybe_transition)"


def test_differences_name_the_paths_that_changed() -> None:
    before = {"state": {"quorum": {"epoch": 1, "voted_id": 1}, "topics": [1, 2]}}
    after = {"state": {"quorum": {"epoch": 2, "voted_id": 1}, "topics": [1, 3]}}
    assert differences(before, after) == ["state.quorum.epoch: 1 -> 2", "state.topics[1]: 2 -> 3"]


def test_context_leaves_the_bystander_out(tmp_path: Path) -> None:
    document = {
        "cluster_id": "c",
        "quorum": {"node_id": 1, "voters": ["1@127.0.0.1:5"], "epoch": 2, "leader_id": 1},
        "brokers": [
            {"id": 11, "epoch": 3, "incarnation_id": str(uuid.UUID(int=1)), "fenced": False},
            {"id": 100, "epoch": 4, "incarnation_id": str(uuid.UUID(int=2)), "fenced": False},
        ],
        "topics": [],
    }
    document["quorum"] |= {"log_end_offset": 9, "high_watermark": 9}
    context = context_from(document, tmp_path, bystander_id=100, dead_port=1)
    assert context.broker_ids == (11,) and context.voter_ports == {1: 5}


def test_make_fuzz_daemon_runs_its_command_line_at_a_small_size(tmp_path: Path) -> None:
    """`make fuzz-daemon`'s command (from `make -n`), 40 frames of the single set-up: it reports the
    set-up's counts, writes its files, and exits 0 when clean, 1 with findings."""
    out = tmp_path / "out"
    command = sized("fuzz-daemon", frames="40", setups="single", jobs="1", seed="3", out=str(out))
    done = subprocess.run(
        [sys.executable, *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    summary = json.loads((out / "summary.json").read_text())
    assert [item["setup"] for item in summary] == ["single"] and summary[0]["frames"] == 40, done.stdout
    findings = (out / "findings.jsonl").read_text().splitlines()
    assert done.returncode == (1 if findings else 0), done.stdout + done.stderr[-3000:]
    assert re.search(r"^single: 40 frames in \d+ s \(\d+/s while fuzzing\); answered \d+", done.stdout, re.M)
    assert "bystander: " in done.stdout and " p99 " in done.stdout


def test_the_command_line_refuses_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--frames", "0"], ["--setups", "nowhere"], ["--setups", "single,single"], ["--frames", "x"]):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
    assert split(10, ["a", "b", "c"]) == {"a": 4, "b": 3, "c": 3}
