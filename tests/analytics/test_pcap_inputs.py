"""pcap files as the job's input (analytics.pcaps): which inputs are which, names, and the rows Spark makes.

The files are crafted (tests/pcap/craft.py); the real tcpdump of a fleet run is test_pcap_job.py's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession

from analytics import pcaps, transforms
from analytics.read import CaptureError
from analytics.schema import decoded_spark_schema
from tests.pcap.craft import (
    BASE_US,
    KAFKA_PORT,
    Flow,
    heartbeat,
    heartbeat_response,
    other_request,
    other_response,
    write,
)

from . import scenario
from .captures import write_capture
from .test_job import refusal


def conversation(path: Path, *, lose_a_segment: bool = False) -> Path:
    """A connection with a heartbeat, a Produce v9 (acks=0), a Metadata v12 and its answer, and a heartbeat
    whose request loses a 20-byte segment when `lose_a_segment`; plus a TLS connection."""
    flow = Flow()
    packets = flow.handshake(BASE_US)
    packets += flow.request(heartbeat(1), BASE_US + 10) + flow.response(heartbeat_response(1), BASE_US + 20)
    packets += flow.request(other_request(0, 9, 2, 3_000), BASE_US + 30)
    packets += flow.request(other_request(3, 12, 3, 40), BASE_US + 40) + flow.response(
        other_response(3, 100), BASE_US + 50
    )
    broken = flow.request(heartbeat(4), BASE_US + 60, mss=20)
    if lose_a_segment:
        del broken[1]
    packets += broken + flow.close(BASE_US + 100)
    tls = Flow(client_port=50001)
    packets += tls.handshake(BASE_US + 200) + tls.request(b"\x16\x03\x01\x00\x05hello", BASE_US + 210)
    packets += tls.close(BASE_US + 220)
    return write(path, packets)


def test_inputs_are_capture_dirs_pcap_files_and_dirs_holding_either(tmp_path: Path) -> None:
    captured = tmp_path / "capture"
    write_capture(captured, scenario.controller_rows())
    both = tmp_path / "both"
    write_capture(both, scenario.fleet_rows(), prefix="fleet")
    for name in ("broker.pcap", "broker.pcap1", "ctl.pcapng"):  # tcpdump -C rotates broker.pcap into broker.pcap1
        conversation(both / name)
    (both / "notes.pcap").write_text("not a capture")  # a pcap's name, not its first bytes: not read
    (both / "x.txt").write_bytes((both / "ctl.pcapng").read_bytes())  # a pcap's bytes, not its name: not read
    single = conversation(tmp_path / "single.cap")
    directories, files = pcaps.find_inputs([captured, both, single])
    assert directories == [captured, both]
    assert files == [both / "broker.pcap", both / "broker.pcap1", both / "ctl.pcapng", single]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda root: (root / "a.txt").write_text("x") and root / "a.txt", "not a capture dir, and not a pcap"),
        (lambda root: (root / "empty").mkdir() or root / "empty", "no capture parts"),
        (lambda root: root / "missing", "not a directory"),
    ],
)
def test_an_input_that_is_neither_is_refused_in_one_line(tmp_path: Path, make: object, message: str) -> None:
    given = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(CaptureError, match=message):
        pcaps.find_inputs([given])


def test_files_of_the_same_name_are_told_apart_by_their_directory(tmp_path: Path) -> None:
    files = [tmp_path / "broker-1" / "capture.pcap", tmp_path / "broker-2" / "capture.pcap", tmp_path / "ctl.pcap"]
    assert pcaps.source_names(files) == {
        files[0]: "broker-1/capture.pcap",
        files[1]: "broker-2/capture.pcap",
        files[2]: "ctl.pcap",
    }
    assert pcaps.source_names(files[1:]) == {files[1]: "capture.pcap", files[2]: "ctl.pcap"}


@pytest.mark.parametrize("port", ["0", "65536", "ninety"])
def test_a_bad_kafka_port_is_refused_in_one_line(tmp_path: Path, port: str) -> None:
    single = conversation(tmp_path / "single.pcap")
    code, stderr = refusal(tmp_path, str(single), "--out", str(tmp_path / "out"), "--kafka-port", port)
    assert code == 2
    assert stderr.strip().splitlines()[-1].startswith("fencer-analyze: error: argument --kafka-port: not a")


def test_spark_reads_each_file_into_exchanges_counted_traffic_and_problems(spark: SparkSession, tmp_path: Path) -> None:
    files = [conversation(tmp_path / "a.pcap"), conversation(tmp_path / "b.pcap", lose_a_segment=True)]
    rows = pcaps.read_pcaps(spark, files, frozenset({KAFKA_PORT})).cache()
    assert rows.rdd.getNumPartitions() == 2  # a task a file
    exchanges = pcaps.exchanges_of(rows).collect()
    assert sorted((row["source"], row["api_key"], row["correlation_id"]) for row in exchanges) == [
        ("a.pcap", 63, 1), ("a.pcap", 63, 4), ("b.pcap", 63, 1),  # b's second heartbeat lost a segment
    ]  # fmt: skip
    assert {(row["peer"], row["server"], row["direction"]) for row in exchanges} == {
        ("10.0.0.1:50000", f"10.0.0.2:{KAFKA_PORT}", "inbound")
    }
    other = pcaps.other_traffic(rows).filter("source = 'a.pcap'")
    counted = other.select("kind", "api_name", "api_version", "connections", "requests", "responses")
    assert counted.orderBy("kind", "api_key").collect() == [
        Row("kafka", "Produce", 9, 1, 1, 0), Row("kafka", "Metadata", 12, 1, 1, 1), Row("tls", None, None, 1, 0, 0),
    ]  # fmt: skip
    problems = pcaps.stream_problems(rows).collect()
    assert [(row["source"], row["connection_id"]) for row in problems] == [("b.pcap", 1)]
    assert "20 bytes missing" in problems[0]["reason"]
    assert (
        pcaps.stream_problems(rows).columns
        == transforms.decode_errors(spark.createDataFrame([], decoded_spark_schema())).columns
    )


def test_a_pcap_that_cannot_be_read_is_refused_in_one_line(tmp_path: Path) -> None:
    """Given by name or found in a directory: exit 2 naming it, never silently left out."""
    held = tmp_path / "held"
    held.mkdir()
    locked = conversation(held / "broker.pcap")
    locked.chmod(0)
    for given, said in ((locked, f"{locked}: cannot be read (Permission denied)"),
                        (held, f"capture dir {held}: cannot read broker.pcap (Permission denied)")):  # fmt: skip
        code, stderr = refusal(tmp_path, str(given), "--out", str(tmp_path / "out"), bound_by_modes=True)
        assert (code, stderr.strip().splitlines()) == (2, [f"fencer-analyze: {said}"])
