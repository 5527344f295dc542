"""TEMPORARY STAND-IN for the fleet engine of issue 9, so that the command line, the display, the
report and `--processes` can be built and tested before the engine lands. The lead drops this file
at merge in favour of the engine's `broker_sim/fleet.py`, which has exactly this interface.

What it does (small but real, over TCP): connects to the controller, asks DescribeCluster v1 and
ApiVersions v3 (failure -> `unreachable`), then asks ApiVersions once a second until the duration
is over, counting each request in the stats; writes RunStarted and RunEnded to the journal.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import trio

from broker_sim.journal import JournalWriter, RunEnded, RunStarted
from broker_sim.stats import FleetStats
from protocol.error_codes import ErrorCode
from protocol.errors import DecodeError
from protocol.framing import FrameBuffer
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.registry import api, decode_response, encode_request
from protocol.spec import Data

_API_VERSIONS = ApiVersionsRequest(client_software_name="fencer-fleet", client_software_version="0.1")
SCENARIOS = ("steady", "rolling-restart", "disk-failures", "chaos")


@dataclass(frozen=True)
class FleetConfig:
    controller_host: str = "127.0.0.1"
    controller_port: int = 9093
    brokers: int = 3
    first_broker_id: int = 0
    topics: int = 1
    partitions: int = 3
    replication_factor: int = 3
    duration_s: float = 30.0
    seed: int = 0
    scenario: str = "steady"
    heartbeat_ms: int = 2000
    session_timeout_ms: int = 9000
    capture_dir: Path | None = None
    journal_path: Path | None = None
    create_topics: bool = True
    listen_host: str = "127.0.0.1"


@dataclass(frozen=True)
class FleetOutcome:
    finished: bool
    unreachable: str | None


class _Client:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.frames = FrameBuffer()
        self.correlation_id = 0

    async def request(self, body: Data, version: int, stats: FleetStats) -> Data:
        self.correlation_id += 1
        started = time.monotonic()
        await self.stream.send_all(encode_request(body, version, self.correlation_id, client_id="fencer-fleet"))
        while (payload := self.frames.next_frame()) is None:
            data = await self.stream.receive_some(65536)
            if not data:
                raise ConnectionError("the controller closed the connection")
            self.frames.receive_data(data)
        _header, answer = decode_response(payload, body.API.key, version)
        error = int(getattr(answer, "error_code", 0))
        name = None if error == 0 else ErrorCode(error).name if error in ErrorCode.__members__.values() else str(error)
        stats.request(api(body.API.key).name, (time.monotonic() - started) * 1000, name)
        return answer


async def run_fleet(
    config: FleetConfig, stats: FleetStats, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> FleetOutcome:
    journal = JournalWriter(config.journal_path) if config.journal_path is not None else None
    finished = False
    if journal is not None:
        journal.write(
            RunStarted(
                wall_ns=time.time_ns(),
                seed=config.seed,
                scenario=config.scenario,
                brokers=config.brokers,
                first_broker_id=config.first_broker_id,
                heartbeat_ms=config.heartbeat_ms,
                session_timeout_ms=config.session_timeout_ms,
                shutdown_bound_ms=30_000,
            )
        )
        journal.flush()
    try:
        where = f"{config.controller_host}:{config.controller_port}"
        try:
            with trio.fail_after(5):
                stream = await trio.open_tcp_stream(config.controller_host, config.controller_port)
                client = _Client(stream)
                await client.request(DescribeClusterRequest(), 1, stats)
                await client.request(_API_VERSIONS, 3, stats)
        except (OSError, trio.TooSlowError, DecodeError, ConnectionError) as error:
            return FleetOutcome(finished=False, unreachable=f"controller {where} unreachable: {error or 'timed out'}")
        stats.brokers_by_state["running"] = config.brokers
        task_status.started()
        deadline = trio.current_time() + config.duration_s
        async with stream:
            while trio.current_time() < deadline:
                await trio.sleep(min(1.0, max(0.0, deadline - trio.current_time())))
                await client.request(_API_VERSIONS, 3, stats)
        finished = True
        return FleetOutcome(finished=True, unreachable=None)
    finally:
        if journal is not None:
            journal.write(RunEnded(wall_ns=time.time_ns(), finished=finished))
            journal.close()
