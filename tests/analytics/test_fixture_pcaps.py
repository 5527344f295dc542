"""The job's pcap import on real Kafka client captures (../shared/fixtures/pcap, read in place).

The two fixture directories go in as the command line gives them (`find_inputs`), are read by the
executors on the shared session (`read_pcaps`, a task a file), and their exchanges are decoded by
the job's decoder; what comes out must be what DeepFlow's expected parses say (tests/pcap/deepflow.py)
and, for the two captures without one, what their README says: ApiVersions decoded, with its
error code; every client API counted in `other_traffic` by source, API and version, with its
frames' bytes; nothing in `decode_errors`. tests/pcap/test_fixture_captures.py holds the reader
alone to the same messages, correlation ids included.
"""

from __future__ import annotations

from collections import Counter

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from analytics import pcaps
from analytics.pcap import frames as frames_module
from analytics.pcap.kafka_apis import KAFKA_API_NAMES
from analytics.read import read_captures
from analytics.schema import EXCHANGE_ROW
from tests.pcap.deepflow import (
    PORTS,
    WITH_RESULT,
    WITHOUT_RESULT,
    Expected,
    arkime_capture,
    deepflow_dir,
    parse_result,
)

API_KEYS = {name: key for key, name in KAFKA_API_NAMES.items()}
Key = tuple[str, str, int]  # source, API, version


class Wanted:
    """What the job must find, from DeepFlow's parses and, for the captures without one, their README."""

    def __init__(self) -> None:
        #: source, API, version, correlation id, error code, request and response bytes
        self.exchanges: list[tuple[object, ...]] = []
        self.frames: dict[Key, tuple[int, int]] = {}  # counted requests and responses
        self.bytes: dict[Key, tuple[int, int]] = {}  # their bytes, where DeepFlow states them
        for name in WITH_RESULT:
            self._add(f"{name}.pcap", parse_result(deepflow_dir() / f"{name}.result"))
        self.frames[(f"{WITHOUT_RESULT}.pcap", "Fetch", 12)] = (1, 1)  # the Fetch v12 pair its name says
        self.frames[("kafka.pcap", "ListOffsets", 0)] = (1, 0)  # Arkime's one request, unanswered

    def _add(self, source: str, messages: list[Expected]) -> None:
        requests = {m.message.correlation_id: m.message for m in messages if m.message.kind == "Request"}
        for expected in messages:
            message = expected.message
            if API_KEYS[message.api_name] in frames_module.CONTROL_PLANE_KEYS:
                if message.kind == "Response":
                    request_size = requests[message.correlation_id].size
                    header = (source, message.api_name, message.api_version, message.correlation_id)
                    self.exchanges.append((*header, expected.status_code, request_size, message.size))
                continue
            key = (source, message.api_name, message.api_version)
            frames, sizes = self.frames.get(key, (0, 0)), self.bytes.get(key, (0, 0))
            if message.kind == "Request":
                self.frames[key], self.bytes[key] = (frames[0] + 1, frames[1]), (sizes[0] + message.size, sizes[1])
            else:
                self.frames[key], self.bytes[key] = (frames[0], frames[1] + 1), (sizes[0], sizes[1] + message.size)


def test_the_job_reads_every_fixture_capture_into_exchanges_and_other_traffic(spark: SparkSession) -> None:
    directories, files = pcaps.find_inputs([deepflow_dir(), arkime_capture().parent])
    assert directories == []
    names = [*(f"{name}.pcap" for name in WITH_RESULT), f"{WITHOUT_RESULT}.pcap", "kafka.pcap"]
    assert sorted(path.name for path in files) == sorted(names)
    rows = pcaps.read_pcaps(spark, files, PORTS).cache()
    try:
        decoded = read_captures(spark, [], more=[pcaps.exchanges_of(rows)])
        exchanges = decoded.filter(F.col("row_kind") == EXCHANGE_ROW).collect()
        other = pcaps.other_traffic(rows).collect()
        problems = pcaps.stream_problems(rows).collect()
    finally:
        rows.unpersist()
    wanted = Wanted()
    assert problems == []
    assert [row["decode_error"] for row in exchanges] == [None] * len(exchanges)
    columns = ("source", "api_name", "api_version", "correlation_id", "error_code", "request_bytes", "response_bytes")
    assert Counter(tuple(row[column] for column in columns) for row in exchanges) == Counter(wanted.exchanges)
    assert {row["kind"] for row in other} == {"kafka"}
    keys = [(row["source"], row["api_name"], row["api_version"]) for row in other]
    assert len(set(keys)) == len(keys)  # one row per source, API and version
    assert {key: (row["requests"], row["responses"]) for key, row in zip(keys, other, strict=True)} == wanted.frames
    stated = {key: (row["request_bytes"], row["response_bytes"]) for key, row in zip(keys, other, strict=True)}
    assert {key: stated[key] for key in wanted.bytes} == wanted.bytes
