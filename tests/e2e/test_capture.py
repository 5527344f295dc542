"""Traffic capture through the real daemon: every inbound exchange becomes a row, readable by pyarrow.

Rows are checked against what the client sent and received, byte for byte: a part written while
the daemon runs (the event loop converts its rows in slices, a thread writes it) and the last
part, written when SIGTERM drains the daemon.
"""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow.dataset as ds

from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.registry import decode_response, encode_request

from .daemon_process import DaemonProcess
from .fencer_client import FencerClient


def parts(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.parquet"))


def test_every_inbound_exchange_is_a_row_with_its_frames(tmp_path: Path) -> None:
    capture = tmp_path / "capture"
    daemon = DaemonProcess(tmp_path / "data", "--capture-dir", str(capture)).start()
    sent: dict[int, tuple[int, int, bytes]] = {}  # correlation id -> (api key, version, request payload)
    try:
        with FencerClient(daemon.port) as client:
            for round_number in range(300):
                body, version = (ApiVersionsRequest(), 3) if round_number % 2 else (DescribeClusterRequest(), 0)
                correlation_id = client.send(body, version)
                sent[correlation_id] = (
                    body.API.key,
                    version,
                    encode_request(body, version, correlation_id, "fencer-test")[4:],
                )
                client.receive(body.API.key, version, correlation_id)
            deadline = time.monotonic() + 10
            while not parts(capture) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert parts(capture), "no part was written while the daemon ran (rotation is every 2 s)"
            first_part = parts(capture)[0]
            correlation_id = client.send(DescribeClusterRequest(), 1)
            sent[correlation_id] = (
                60,
                1,
                encode_request(DescribeClusterRequest(), 1, correlation_id, "fencer-test")[4:],
            )
            client.receive(60, 1, correlation_id)
    finally:
        assert daemon.stop() == 0, daemon.stderr()

    assert len(parts(capture)) >= 2 and first_part in parts(capture)
    assert not [path for path in capture.iterdir() if path.name.startswith(".")], "temporary files left behind"
    table = ds.dataset(capture, format="parquet").to_table().to_pylist()
    assert len(table) == len(sent) == 301
    connection_ids = {row["connection_id"] for row in table}
    assert len(connection_ids) == 1
    for row in table:
        key, version, payload = sent[row["correlation_id"]]
        assert (row["direction"], row["api_key"], row["api_version"]) == ("inbound", key, version)
        assert row["request"] == payload
        assert row["peer"].startswith("127.0.0.1:")
        assert row["request_time_ns"] <= row["response_time_ns"]
        header, _ = decode_response(row["response"], key, version)
        assert header.correlation_id == row["correlation_id"]
