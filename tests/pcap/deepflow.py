"""The real Kafka client captures in ../shared/fixtures/pcap, and DeepFlow's expected parses of them.

`deepflow-kafka/NAME.pcap` (DeepFlow's Kafka captures: one client and one broker, most a single
request and its response) comes with `NAME.result`, DeepFlow's parser output: one line per Kafka
message, Rust's debug print of its `KafkaInfo`, e.g.

    KafkaInfo { msg_type: Request, correlation_id: Some(1), api_key: Produce, api_version: 2,
    client_id: "console-producer", ..., status_code: None, req_msg_size: Some(117), ... } is_kafka: true

(on one line), and `is_kafka: false` lines for packets that carry no message. `parse_result`
keeps what a frame's header states: request or response, the correlation id, the API (DeepFlow
names it as Kafka does), the version and the frame's size (`req_msg_size` / `resp_msg_size`: the
size prefix's value, the bytes after it), plus a response's `status_code` (for ApiVersions, its
error code). `arkime-kafka/kafka.pcap` (Arkime's) has no such file; nor has `01-fetch-v12-perf`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from tests.shared_fixtures import shared_fixture

#: The DeepFlow captures with a `.result` (all but 01-fetch-v12-perf).
WITH_RESULT = (
    "00-produce-v2",
    "00-produce-v7-sw8",
    "00-produce-v9",
    "01-fetch-v12-ok",
    "01-fetch-v12-unknown",
    "11-join-group-v7",
    "13-leave-group-v4",
    "14-sync-group-v5",
    "18-api-versions-v3",
    "mixed-with-unsupported",
)
WITHOUT_RESULT = "01-fetch-v12-perf"
#: Kafka's port, and the one six of DeepFlow's captures were taken on (00-produce-v7-sw8's broker
#: listens on 36333): the ports a user names with `--kafka-port` (Wireshark's `kafka.tcp.ports`).
PORTS = frozenset({9092, 36333})


class Message(NamedTuple):
    """A Kafka frame as its header states it."""

    kind: str  # "Request" | "Response"
    api_name: str
    api_version: int
    correlation_id: int
    size: int  # the size prefix's value: the frame's bytes after it


class Expected(NamedTuple):
    message: Message
    status_code: int | None  # a response's, where DeepFlow read one


def deepflow_dir() -> Path:
    return shared_fixture("pcap", "deepflow-kafka")


def arkime_capture() -> Path:
    return shared_fixture("pcap", "arkime-kafka", "kafka.pcap")


def capture(name: str) -> Path:
    return shared_fixture("pcap", "deepflow-kafka", f"{name}.pcap")


def _field(line: str, name: str) -> str | None:
    """Field `name`'s value: `Some(x)` as x, `None` as None, anything else as written."""
    found = re.search(r"[{,] " + name + r": ([^,{}]*?)(?=, | \})", line)
    if found is None:
        raise ValueError(f"no {name} in DeepFlow's line: {line[:200]}")
    value = found.group(1)
    if value == "None":
        return None
    some = re.fullmatch(r"Some\((.*)\)", value)
    return value if some is None else some.group(1)


def _number(line: str, name: str) -> int:
    value = _field(line, name)
    if value is None or not re.fullmatch(r"-?\d+", value):
        raise ValueError(f"{name} is not a number in DeepFlow's line: {line[:200]}")
    return int(value)


def parse_result(path: Path) -> list[Expected]:
    """The messages of a `.result` file, in its order; ValueError for a KafkaInfo line it cannot read."""
    expected = []
    for line in path.read_text().splitlines():
        if not line.startswith("KafkaInfo {"):
            continue
        kind, api_name = _field(line, "msg_type"), _field(line, "api_key")
        if kind not in ("Request", "Response") or api_name is None:
            raise ValueError(f"neither a request nor a response of an API in DeepFlow's line: {line[:200]}")
        size = _number(line, "req_msg_size" if kind == "Request" else "resp_msg_size")
        message = Message(kind, api_name, _number(line, "api_version"), _number(line, "correlation_id"), size)
        status = None if kind == "Request" or _field(line, "status_code") is None else _number(line, "status_code")
        expected.append(Expected(message, status))
    return expected
