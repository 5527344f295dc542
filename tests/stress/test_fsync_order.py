"""The fsync-order check (tests/stress/fsync_order.py): the real daemon passes it, a copy whose log
is never fsync'd fails it, and the trace reader gets strace's interleaved threads right."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from protocol.api_keys import ApiKey
from protocol.messages.broker_heartbeat import BrokerHeartbeatResponse
from protocol.messages.create_topics import CreateTopicsResponse, CreateTopicsResponseCreatableTopicResult
from protocol.records.batch_writer import metadata_batch
from protocol.records.metadata import TopicRecord
from protocol.records.metadata_value import encode_metadata_value
from protocol.registry import encode_response
from protocol.spec import Data

from .fsync_order import StraceMissing, check_trace, require_strace, traced_run

SEGMENT = "/data/__cluster_metadata-0/00000000000000000000.log"
CONNECTION = "TCP:[127.0.0.1:9093->127.0.0.1:40000]"
TOPIC = uuid.UUID(int=7)
#: the load's requests: (client port, correlation id) -> (api key, version)
REQUESTS = {(40000, 1): (ApiKey.CREATE_TOPICS, 7), (40000, 2): (ApiKey.BROKER_HEARTBEAT, 1)}


def _hex(data: bytes) -> str:
    return "".join(f"\\x{byte:02x}" for byte in data)


def log_write(offset: int, record: Data, pid: int = 10, tail: str = " = {n}") -> str:
    """A log write of one batch holding `record` at `offset`, as `strace -yy -xx` prints it."""
    batch = metadata_batch(offset, 1, 0, [encode_metadata_value(record, 0)])
    return f'{pid} write(3<{SEGMENT}>, "{_hex(batch)}", {len(batch)})' + tail.format(n=len(batch))


def answer(frame: bytes, pid: int = 11, target: str = CONNECTION) -> str:
    return f'{pid} write(7<{target}>, "{_hex(frame)}", {len(frame)}) = {len(frame)}'


TOPIC_WRITE = log_write(5, TopicRecord(name="t", topic_id=TOPIC))
OTHER_WRITE = log_write(6, TopicRecord(name="u", topic_id=uuid.UUID(int=8)))
CREATED = encode_response(
    CreateTopicsResponse(topics=(CreateTopicsResponseCreatableTopicResult(name="t", topic_id=TOPIC),)), 7, 1
)
ANSWER = answer(CREATED)
FSYNC = f"10 fsync(3<{SEGMENT}>) = 0"


def test_the_daemon_answers_only_after_its_log_is_fsynced(tmp_path: Path) -> None:
    report = traced_run(tmp_path / "data", seconds=3)
    assert report.ok, report.format()
    assert report.tied > 200 and report.log_fsyncs > 100, report.format()
    assert report.load["create"] and report.load["delete"] and report.load["register"], report.format()


def test_a_daemon_without_log_fsync_is_caught(tmp_path: Path) -> None:
    report = traced_run(tmp_path / "data", seconds=2, module="tests.stress.no_fsync_daemon")
    assert not report.ok
    assert report.log_fsyncs == 0 and report.log_writes > 100
    assert len(report.violations) == report.tied > 100  # every answer reporting a record
    assert "violation 1: answer" in report.format()


def test_a_missing_strace_fails_and_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(StraceMissing, match="install it"):
        require_strace()
    with pytest.raises(StraceMissing):
        traced_run(tmp_path / "data", seconds=1)
    assert issubclass(StraceMissing, AssertionError)  # a failure, never a skip


def test_an_answer_after_the_fsync_of_its_records_passes() -> None:
    report = check_trace([TOPIC_WRITE, FSYNC, ANSWER], 9093, REQUESTS)
    assert (report.answers, report.tied, report.log_writes, report.log_fsyncs, report.violations) == (1, 1, 1, 1, [])


def test_an_answer_while_a_later_commit_is_unsynced_passes() -> None:
    """Pipelined: the next commit's write may be in flight while this one's answers leave."""
    lines = [TOPIC_WRITE, FSYNC, OTHER_WRITE, ANSWER, FSYNC]
    assert check_trace(lines, 9093, REQUESTS).violations == []


def test_an_answer_while_the_fsync_of_its_records_is_unfinished_is_a_violation() -> None:
    lines = [TOPIC_WRITE, f"10 fsync(3<{SEGMENT}> <unfinished ...>", ANSWER, "10 <... fsync resumed>) = 0", ANSWER]
    report = check_trace(lines, 9093, REQUESTS)
    assert [(line, write) for line, _, write in report.violations] == [(ANSWER, TOPIC_WRITE)]
    assert report.answers == 2 and report.log_fsyncs == 1


def test_an_unsynced_write_before_the_one_holding_its_records_is_a_violation() -> None:
    """A segment rolled without its last writes fsync'd: the answer's own segment was fsync'd."""
    old_segment = OTHER_WRITE.replace("00000000000000000000.log", "00000000000000000001.log")
    lines = [old_segment, TOPIC_WRITE, FSYNC, ANSWER]
    report = check_trace(lines, 9093, REQUESTS)
    assert [(line, write) for line, _, write in report.violations] == [(ANSWER, old_segment)]


def test_an_answer_before_its_records_were_written_is_a_violation() -> None:
    report = check_trace([OTHER_WRITE, FSYNC, ANSWER, TOPIC_WRITE, FSYNC], 9093, REQUESTS)
    assert len(report.violations) == 1 and "no log write holds its record" in report.violations[0][1]


def test_a_fsync_covers_only_the_writes_that_came_before_it() -> None:
    late_write = log_write(5, TopicRecord(name="t", topic_id=TOPIC), pid=12, tail=" <unfinished ...>")
    lines = [OTHER_WRITE, f"10 fsync(3<{SEGMENT}> <unfinished ...>", late_write, "10 <... fsync resumed>) = 0", ANSWER]
    assert [write for _, _, write in check_trace(lines, 9093, REQUESTS).violations] == [late_write]


def test_a_failed_fsync_covers_nothing() -> None:
    lines = [TOPIC_WRITE, f"10 fsync(3<{SEGMENT}>) = -1 EIO (Input/output error)", ANSWER]
    assert len(check_trace(lines, 9093, REQUESTS).violations) == 1


def test_answers_reporting_no_record_are_counted_not_tied() -> None:
    heartbeat = answer(encode_response(BrokerHeartbeatResponse(), 1, 2))
    unknown = answer(encode_response(BrokerHeartbeatResponse(), 1, 99))  # not one of the load's requests
    report = check_trace([TOPIC_WRITE, heartbeat, unknown], 9093, REQUESTS)
    assert (report.answers, report.tied, report.violations, report.ok) == (2, 0, [], False)


def test_an_answer_split_over_two_writes_is_read_whole() -> None:
    first, rest = CREATED[:7], CREATED[7:]
    lines = [TOPIC_WRITE, answer(first), FSYNC, answer(rest)]
    report = check_trace(lines, 9093, REQUESTS)
    assert (report.answers, report.tied, report.violations) == (1, 1, [])


def test_only_sockets_accepted_on_the_listener_carry_answers() -> None:
    outbound = answer(CREATED, target="TCP:[127.0.0.1:5555->127.0.0.1:9093]")  # to a broker listening on 9093
    ipv6 = answer(CREATED, target="TCPv6:[[::1]:9093->[::1]:40000]")
    other_file = (
        '10 write(4</data/__cluster_metadata-0/00000000000000000000-0000000001.checkpoint.part>, "\\x00", 1) = 1'
    )
    report = check_trace([TOPIC_WRITE, other_file, outbound, ipv6], 9093, REQUESTS)
    assert (report.answers, report.log_writes) == (1, 1)
    assert [line for line, _, _ in report.violations] == [ipv6]
