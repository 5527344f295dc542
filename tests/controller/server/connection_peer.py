"""A connection of the daemon over a real socket pair, against a host that plays the writer.

The host records what the connection hands over and answers when the test says so; the peer's
end of the socket is a plain socket the test writes to and reads from.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

from controller.server.budget import MemoryBudget
from controller.server.connection import Connection
from controller.server.pending import Pending
from protocol.framing import FrameBuffer
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
)
from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.registry import encode_request, encode_response


@dataclass
class Host:
    """The connection's writer and exchange sink: `submitted` is the writer's queue."""

    max_frame_bytes: int = 1 << 20
    draining: bool = False
    budget: MemoryBudget = field(default_factory=lambda: MemoryBudget(1 << 30))
    submitted: list[Pending] = field(default_factory=list)
    answers: list[Pending] = field(default_factory=list)
    unanswered_: list[Pending] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    invalid_details: list[str] = field(default_factory=list)
    tls_failures: list[str] = field(default_factory=list)
    arrived: trio.Event = field(default_factory=trio.Event)

    def submit(self, pending: Pending) -> bool:
        self.submitted.append(pending)
        self.arrived.set()
        return True

    async def wait_for_room(self) -> None:
        raise AssertionError("the host's queue is never full")

    def answered(self, pending: Pending) -> None:
        self.answers.append(pending)

    def unanswered(self, pending: Pending) -> None:
        self.unanswered_.append(pending)

    def refused(self, reason: str, peer: str, payload: bytes | None, detail: str) -> None:
        self.invalid.append(reason)
        self.invalid_details.append(detail)

    def tls_failed(self, reason: str, peer: str, detail: str) -> None:
        self.tls_failures.append(reason)

    async def next_request(self, count: int) -> Pending:
        """Wait until `count` requests have been handed over; return the last."""
        with trio.fail_after(5):
            while len(self.submitted) < count:
                self.arrived = trio.Event()
                await self.arrived.wait()
        return self.submitted[count - 1]

    def answer(self, pending: Pending, frame_bytes: bytes | None = None) -> None:
        """What the writer does once the request is durable."""
        assert pending.request is not None
        header = pending.request.header
        pending.answer(frame_bytes or encode_response(ApiVersionsResponse(), 0, header.correlation_id))


@dataclass
class Pair:
    host: Host
    connection: Connection
    peer: socket.socket
    done: trio.Event


def open_pair(host: Host, nursery: trio.Nursery) -> Pair:
    """A connection of `host` running in `nursery`, and the peer's end of its socket (non-blocking)."""
    ours, theirs = socket.socketpair()
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(ours))
    connection = Connection(
        stream, writer=host, exchanges=host, budget=host.budget, max_frame_bytes=host.max_frame_bytes
    )
    done = trio.Event()

    async def run() -> None:
        await connection.run()
        done.set()

    nursery.start_soon(run)
    theirs.setblocking(False)
    return Pair(host, connection, theirs, done)


def request(correlation_id: int) -> bytes:
    return encode_request(ApiVersionsRequest(), 0, correlation_id)


async def read_frames(peer: socket.socket, count: int) -> list[bytes]:
    buffer = FrameBuffer()
    frames: list[bytes] = []
    with trio.fail_after(5):
        while len(frames) < count:
            await trio.lowlevel.wait_readable(peer)
            data = peer.recv(1 << 20)
            if not data:
                break
            buffer.receive_data(data)
            frames.extend(buffer.frames())
    return frames


async def closed_by_daemon(pair: Pair) -> bool:
    with trio.fail_after(5):
        await pair.done.wait()
    with trio.fail_after(5):
        await trio.lowlevel.wait_readable(pair.peer)
    try:
        return pair.peer.recv(1) == b""
    except ConnectionResetError:
        return True


def correlation_of(payload: bytes) -> int:
    return int.from_bytes(payload[:4], "big")


def alter_partition(correlation_id: int, partitions: int) -> tuple[AlterPartitionRequest, bytes]:
    """A valid AlterPartition v2 naming `partitions` partitions (about 27 bytes each), and its frame."""
    parts = tuple(
        AlterPartitionRequestPartitionData(partition_index=i, leader_epoch=3, new_isr=(1, 2, 3), partition_epoch=7)
        for i in range(partitions)
    )
    topic = AlterPartitionRequestTopicData(topic_id=uuid.UUID(int=9), partitions=parts)
    body = AlterPartitionRequest(broker_id=1, broker_epoch=5, topics=(topic,))
    return body, encode_request(body, 2, correlation_id)


async def until(condition: Callable[[], bool]) -> None:
    with trio.fail_after(10):
        while not condition():
            await trio.sleep(0.005)


async def send_all(peer: socket.socket, data: bytes) -> None:
    """Send everything, however long the connection takes to read it (from a worker thread)."""
    peer.setblocking(True)
    await trio.to_thread.run_sync(peer.sendall, data)
