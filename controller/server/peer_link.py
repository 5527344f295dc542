"""The connection from one voter to another: the Raft core's requests to that peer, one at a time.

Rules:
- One connection at a time (ApiVersions first, then the core's requests one by one: the core has
  at most one in flight per peer). A request that cannot be sent or answered is reported
  `RequestFailed` (`RaftDriver.failed`); after a connection attempt fails (connect or
  ApiVersions) the link fails requests at once until its reconnect backoff (50 ms doubling to 1 s,
  Kafka's reconnect.backoff) has passed; a connection that breaks mid-exchange fails that request,
  and the next request opens a new one.
- A FetchSnapshot is fetched chunk by chunk into the log's incoming snapshot before the core sees
  the answer.
- TLS when the daemon's listener is (the node's client context, its own certificate presented,
  the peer's checked against the CA and the voter's host), plaintext otherwise.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING, Any

import trio

from protocol.api_keys import ApiKey
from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.registry import decode_response
from protocol.spec import Data

from ..backoff import exponential_backoff
from ..control.links import CONNECTION_ERRORS, BrokerConnection, PeerError
from ..control.tls import Transport, failure_text, open_stream
from ..log import LogError, SnapshotId
from ..raft import messages as rm
from ..raft import wire, wire_requests, wire_responses
from ..runtime import in_thread
from .connection import socket_of
from .quorum_config import Voter

if TYPE_CHECKING:
    from .raft_driver import RaftDriver

log = logging.getLogger("fencer.quorum")
#: the most log bytes one Fetch answer carries (Kafka's leader caps a fetch at 8 MiB likewise)
FETCH_MAX_BYTES = 8 * 1024 * 1024
SNAPSHOT_CHUNK_BYTES = 1024 * 1024
RECONNECT_BACKOFF_MS = 50
RECONNECT_BACKOFF_MAX_MS = 1000


class PeerLink:
    """The connection to one other voter: the core's requests, one at a time."""

    def __init__(self, driver: RaftDriver, voter: Voter) -> None:
        self.driver = driver
        self.voter = voter
        self._queue: deque[tuple[int, rm.Request]] = deque()
        self._ready = trio.Event()
        self._conn: BrokerConnection | None = None
        self._stream: trio.abc.Stream | None = None
        self._versions: dict[int, int] = {}
        self._failures = 0
        self._retry_at = 0.0
        self.connection_failures = 0

    def submit(self, correlation_id: int, request: rm.Request) -> None:
        self._queue.append((correlation_id, request))
        self._ready.set()

    async def run(self) -> None:
        while True:
            while not self._queue:
                self._ready = trio.Event()
                await self._ready.wait()
            correlation_id, request = self._queue.popleft()
            try:
                response = await self._exchange(request)
            except (*CONNECTION_ERRORS, LogError, ValueError) as exc:
                self._broken(exc)
                self.driver.failed(self.voter.node_id, correlation_id)
                continue
            self.driver.received(self.voter.node_id, correlation_id, response)

    def _broken(self, exc: BaseException) -> None:
        if self._stream is not None:
            self._failures += 1
            self.connection_failures += 1
            log.log(
                logging.WARNING if self._failures == 1 else logging.DEBUG,
                "voter %s: connection failed (%s: %s)", self.voter, type(exc).__name__, exc,
            )  # fmt: skip
            stream, self._stream, self._conn = self._stream, None, None
            sock = socket_of(stream)  # at once, TLS or not: a link broken mid-exchange says no goodbye
            if sock is not None:
                sock.close()

    async def _connected(self) -> BrokerConnection:
        if self._conn is not None:
            return self._conn
        if trio.current_time() < self._retry_at:
            raise PeerError("reconnect backoff")
        timeout_s = self.driver.node.config.request_timeout_ms / 1000
        try:
            with trio.fail_after(timeout_s):
                tls = self.driver.tls
                transport = Transport.PLAINTEXT if tls is None else Transport.TLS
                stream = await open_stream(self.voter.host, self.voter.port, transport, tls)
                conn = BrokerConnection(stream, str(self.voter), 0)
                request = conn.request(
                    ApiVersionsRequest(client_software_name="fencer", client_software_version="0.1"), 3
                )
                await stream.send_all(request.frame)
                _, answer = decode_response(await conn.receive_frame(), ApiKey.API_VERSIONS, 3)
        except BaseException as exc:
            self._failures += 1
            if self._failures == 1 and isinstance(exc, CONNECTION_ERRORS):  # once per run of failures
                log.warning("voter %s: cannot connect (%s)", self.voter, failure_text(exc))
            backoff = exponential_backoff(RECONNECT_BACKOFF_MS, RECONNECT_BACKOFF_MAX_MS, self._failures)
            self._retry_at = trio.current_time() + backoff / 1000
            raise
        assert isinstance(answer, ApiVersionsResponse)
        self._versions = {k.api_key: k.max_version for k in answer.api_keys}
        self._failures = 0
        self._stream, self._conn = stream, conn
        return conn

    async def _call(self, body: Data, version: int) -> Any:
        conn = await self._connected()
        request = conn.request(body, version)
        timeout_s = self.driver.node.config.request_timeout_ms / 1000
        assert self._stream is not None
        with trio.fail_after(timeout_s):
            await self._stream.send_all(request.frame)
            payload = await conn.receive_frame()
        header, response = decode_response(payload, request.api_key, request.version)
        if header.correlation_id != request.correlation_id:
            raise PeerError(f"correlation id {header.correlation_id}, expected {request.correlation_id}")
        return response

    async def _exchange(self, request: rm.Request) -> rm.Response:
        key = _api_key(request)
        await self._connected()
        version = wire.send_version(key, request, self._versions.get(key))
        if isinstance(request, rm.VoteRequest) and request.pre_vote and version < 2:
            raise PeerError(f"voter {self.voter} speaks no pre-vote (Vote v{version})")
        if isinstance(request, rm.FetchSnapshotRequest):
            return await self._fetch_snapshot(request, version)
        body = wire_requests.request_to_wire(request, version, max_bytes=FETCH_MAX_BYTES)
        return wire_responses.response_from_wire(key, await self._call(body, version))

    async def _fetch_snapshot(self, request: rm.FetchSnapshotRequest, version: int) -> rm.Response:
        """Every chunk of the snapshot, into the log's incoming snapshot; the core then sees one
        answer carrying it (or the first error)."""
        log_ = self.driver.log
        snapshot = SnapshotId(request.snapshot_id.offset, request.snapshot_id.epoch)
        incoming = log_.receive_snapshot(snapshot)
        position = 0
        try:
            while True:
                chunk_request = rm.FetchSnapshotRequest(
                    request.cluster_id, request.replica_id, request.current_leader_epoch, request.snapshot_id, position
                )
                body = wire_requests.request_to_wire(chunk_request, version, max_bytes=SNAPSHOT_CHUNK_BYTES)
                response = wire_responses.response_from_wire(ApiKey.FETCH_SNAPSHOT, await self._call(body, version))
                assert isinstance(response, rm.FetchSnapshotResponse)
                if response.error or response.payload is None or incoming is None:
                    if incoming is not None:
                        incoming.abort()
                    return rm.FetchSnapshotResponse(
                        response.error, response.leader_id, response.leader_epoch, response.snapshot_id
                    )
                size, at, data = _chunk(response.payload)
                if at != position or (not data and position < size):
                    raise PeerError(f"snapshot chunk at {at}, expected {position}")
                await in_thread(incoming.append, position, data)
                position += len(data)
                if position >= size:
                    return rm.FetchSnapshotResponse(
                        response.error, response.leader_id, response.leader_epoch, response.snapshot_id, incoming
                    )
        except BaseException:
            if incoming is not None:
                incoming.abort()
            raise


def _chunk(payload: object) -> tuple[int, int, bytes]:
    """A FetchSnapshot answer's (snapshot size, position, bytes), as `wire_responses` carries them."""
    if not isinstance(payload, tuple) or len(payload) != 3:
        raise PeerError(f"not a snapshot chunk: {type(payload).__name__}")
    size, position, data = payload
    return int(size), int(position), bytes(data)


def _api_key(request: rm.Request) -> int:
    if isinstance(request, rm.VoteRequest):
        return ApiKey.VOTE
    if isinstance(request, rm.BeginQuorumEpochRequest):
        return ApiKey.BEGIN_QUORUM_EPOCH
    if isinstance(request, rm.EndQuorumEpochRequest):
        return ApiKey.END_QUORUM_EPOCH
    if isinstance(request, rm.FetchRequest):
        return ApiKey.FETCH
    return ApiKey.FETCH_SNAPSHOT
