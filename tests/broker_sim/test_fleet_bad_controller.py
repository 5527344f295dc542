"""The fleet survives whatever a controller sends back (acceptance 6): garbage, closed connections,
answers with the wrong correlation id. A tiny trio server plays the controller; every fourth
request gets each misbehaviour. The fleet must run its whole duration, journal each bad answer and
keep going; an unreachable controller ends a run at once with one clear line."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import trio

from broker_sim.journal import BadAnswer, RunEnded, read_journal
from broker_sim.shell.fleet import FleetConfig, run_fleet
from broker_sim.stats import FleetStats
from controller.ops.served import INBOUND_API_KEYS
from protocol.framing import FrameBuffer, frame
from protocol.messages.api_versions import ApiVersionsResponse, ApiVersionsResponseApiVersion
from protocol.messages.broker_heartbeat import BrokerHeartbeatResponse
from protocol.messages.broker_registration import BrokerRegistrationResponse
from protocol.messages.describe_cluster import DescribeClusterResponse
from protocol.registry import api, decode_request, encode_response
from protocol.spec import Data
from tests.e2e.daemon_process import free_port


def good_answer(api_key: int, epochs: itertools.count[int]) -> Data:
    if api_key == 60:
        return DescribeClusterResponse(cluster_id="fake-cluster", controller_id=1)
    if api_key == 18:
        entries = tuple(
            ApiVersionsResponseApiVersion(
                api_key=k, min_version=api(k).versions.lowest, max_version=api(k).versions.highest
            )
            for k in sorted(INBOUND_API_KEYS)
        )
        return ApiVersionsResponse(api_keys=entries)
    if api_key == 62:
        return BrokerRegistrationResponse(broker_epoch=next(epochs))
    if api_key == 63:
        return BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False)
    return api(api_key).response()


class MisbehavingController:
    """Answers DescribeCluster properly to the fleet's first probe, then misbehaves in turn."""

    def __init__(self) -> None:
        self.requests = itertools.count()
        self.epochs = itertools.count(10)
        self.misbehaved = {"garbage": 0, "close": 0, "wrong-correlation": 0}

    async def serve(self, stream: trio.SocketStream) -> None:
        frames = FrameBuffer()
        async with stream:
            try:
                while data := await stream.receive_some(65536):
                    frames.receive_data(data)
                    while (payload := frames.next_frame()) is not None:
                        if not await self.answer(stream, payload):
                            return
            except trio.BrokenResourceError:
                return

    async def answer(self, stream: trio.SocketStream, payload: bytes) -> bool:
        request = decode_request(payload)
        number = next(self.requests)
        body = good_answer(request.api_key, self.epochs)
        mode = number % 4 if number > 0 else 3
        if mode == 0:
            self.misbehaved["garbage"] += 1
            await stream.send_all(frame(struct.pack(">i", request.correlation_id) + b"\xff\x17garbage" * 3))
        elif mode == 1:
            self.misbehaved["close"] += 1
            return False
        elif mode == 2:
            self.misbehaved["wrong-correlation"] += 1
            await stream.send_all(encode_response(body, request.api_version, request.correlation_id + 1000))
        else:
            await stream.send_all(encode_response(body, request.api_version, request.correlation_id))
        return True


async def test_the_fleet_survives_garbage_closed_connections_and_wrong_correlation_ids(tmp_path: Path) -> None:
    controller = MisbehavingController()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(trio.serve_tcp, controller.serve, 0)
        port = listeners[0].socket.getsockname()[1]
        stats = FleetStats()
        config = FleetConfig(
            controller_port=port,
            brokers=4,
            topics=1,
            partitions=4,
            duration_s=8.0,
            scenario="chaos",
            heartbeat_ms=500,
            session_timeout_ms=2000,
            journal_path=tmp_path / "journal.jsonl",
        )
        outcome = await run_fleet(config, stats)
        nursery.cancel_scope.cancel()
    assert outcome.unreachable is None and outcome.finished
    assert all(count > 0 for count in controller.misbehaved.values()), controller.misbehaved
    entries = list(read_journal(tmp_path / "journal.jsonl"))
    reasons = {entry.reason.split(":")[0].split(" ")[0] for entry in entries if isinstance(entry, BadAnswer)}
    assert {"undecodable", "correlation"} <= reasons
    assert isinstance(entries[-1], RunEnded)
    assert stats.errors_by_code["BrokerHeartbeat:NETWORK_EXCEPTION"] > 0  # closed connections
    assert stats.requests_by_api["BrokerHeartbeat"] > 10  # and the brokers kept going


async def test_an_unreachable_controller_ends_the_run_at_once_with_one_line(tmp_path: Path) -> None:
    port = free_port()
    config = FleetConfig(controller_port=port, duration_s=60.0, journal_path=tmp_path / "journal.jsonl")
    with trio.fail_after(30):
        outcome = await run_fleet(config, FleetStats())
    assert not outcome.finished
    assert outcome.unreachable is not None and "\n" not in outcome.unreachable
    assert f"127.0.0.1:{port}" in outcome.unreachable
    assert not (tmp_path / "journal.jsonl").exists()
