"""What a refused request must not change, read from the daemon after every frame.

An `Observation` of the fuzzed node is:
- its `/state` document (`GET /state` on `--metrics-listen`: brokers, topics, ACLs, the last
  applied offset, and the quorum view: epoch, leader, vote, state, high watermark, log end
  offset), minus what moves by itself (`VOLATILE`: the leader's `follower_lag`, which follows
  the other voters' fetches);
- the DescribeQuorum answer of the leader minus its timestamps (when the fuzzed node leads);
- the bytes of `__cluster_metadata-0/quorum-state` in its data dir.
Reading one costs about a millisecond (a raw HTTP/1.0 GET, DescribeQuorum on a connection kept
open, a small file read), so it is done after every frame.

Rules: an observation is plain JSON-ready data, so equality is `==` and `differences` can name
the paths that changed.
"""

from __future__ import annotations

import json
import socket
import ssl
import time
from pathlib import Path
from typing import Any

from protocol.messages import describe_quorum as dq
from protocol.registry import decode_response, encode_request

from .client import connect, read_frame
from .context import METADATA_TOPIC

#: /state's quorum members that move by themselves
VOLATILE = ("follower_lag",)
DESCRIBE_QUORUM_VERSION = 2
_DESCRIBE_QUORUM = dq.DescribeQuorumRequest(
    topics=(
        dq.DescribeQuorumRequestTopicData(
            topic_name=METADATA_TOPIC, partitions=(dq.DescribeQuorumRequestPartitionData(partition_index=0),)
        ),
    )
)

Observation = dict[str, Any]


def http_get(port: int, path: str, timeout: float = 10.0) -> tuple[int, bytes]:
    """(status, body) of one GET on the metrics listener (one request per connection)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
        data = bytearray()
        while chunk := sock.recv(1 << 16):
            data += chunk
    head, _, body = bytes(data).partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
    return status, body


def read_state(port: int) -> dict[str, Any]:
    status, body = http_get(port, "/state")
    if status != 200:
        raise OSError(f"GET /state answered {status}")
    document: dict[str, Any] = json.loads(body)
    return document


class QuorumDescriber:
    """DescribeQuorum on a connection of its own, opened again when it fails."""

    def __init__(self, port: int, tls: ssl.SSLContext | None) -> None:
        self.port, self.tls = port, tls
        self.sock: socket.socket | None = None
        self.correlation = 0

    def describe(self) -> dq.DescribeQuorumResponse:
        for attempt in range(2):
            try:
                self.sock = self.sock or connect(self.port, self.tls)
                self.correlation += 1
                self.sock.sendall(encode_request(_DESCRIBE_QUORUM, DESCRIBE_QUORUM_VERSION, self.correlation))
                payload = read_frame(self.sock, time.monotonic() + 10)
                if payload is None:
                    raise ConnectionError("DescribeQuorum: closed")
                _, answer = decode_response(payload, _DESCRIBE_QUORUM.API.key, DESCRIBE_QUORUM_VERSION)
                assert isinstance(answer, dq.DescribeQuorumResponse)
                return answer
            except (OSError, ssl.SSLError):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def describe_quorum_view(answer: dq.DescribeQuorumResponse) -> dict[str, Any]:
    """The answer without its timestamps (`last_fetch_timestamp`, `last_caught_up_timestamp`)."""
    view: dict[str, Any] = {"error_code": answer.error_code}
    for topic in answer.topics:
        for part in topic.partitions:
            view[f"{topic.topic_name}-{part.partition_index}"] = {
                "error_code": part.error_code,
                "leader_id": part.leader_id,
                "leader_epoch": part.leader_epoch,
                "high_watermark": part.high_watermark,
                "voters": [[r.replica_id, str(r.replica_directory_id), r.log_end_offset] for r in part.current_voters],
                "observers": [[r.replica_id, str(r.replica_directory_id), r.log_end_offset] for r in part.observers],
            }
    return view


class Observer:
    """Reads observations of one node: its metrics port, data dir and (if it leads) DescribeQuorum."""

    def __init__(self, metrics_port: int, data_dir: Path, describer: QuorumDescriber | None) -> None:
        self.metrics_port = metrics_port
        self.quorum_state = data_dir / f"{METADATA_TOPIC}-0" / "quorum-state"
        self.describer = describer
        self.document: dict[str, Any] = {}  # the last /state read (volatile members left out)
        self._body = b""

    def observe(self) -> Observation:
        status, body = http_get(self.metrics_port, "/state")
        if status != 200:
            raise OSError(f"GET /state answered {status}")
        if body != self._body:  # most frames change nothing: the document parsed last time serves
            self._body, self.document = body, json.loads(body)
            for member in VOLATILE:
                self.document["quorum"].pop(member, None)
        state = self.document
        try:
            quorum_state = self.quorum_state.read_text()
        except FileNotFoundError:
            quorum_state = None
        observation: Observation = {"state": state, "quorum_state_file": quorum_state}
        if self.describer is not None:
            observation["describe_quorum"] = describe_quorum_view(self.describer.describe())
        return observation

    def close(self) -> None:
        if self.describer is not None:
            self.describer.close()


def differences(before: Any, after: Any, path: str = "", limit: int = 6) -> list[str]:
    """Up to `limit` paths where `after` differs from `before`, each with both values (shortened)."""
    found: list[str] = []
    _diff(before, after, path, found, limit)
    return found


def _diff(before: Any, after: Any, path: str, found: list[str], limit: int) -> None:
    if len(found) >= limit or before == after:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            _diff(before.get(key), after.get(key), f"{path}.{key}" if path else str(key), found, limit)
        return
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            _diff(old, new, f"{path}[{index}]", found, limit)
        return
    found.append(f"{path}: {_brief(before)} -> {_brief(after)}")


def _brief(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else f"{text[:100]}...({len(text)} chars)"
