"""The quorum's inbound side, in one process: Raft requests queue for the quorum's task (bounded; a
full queue makes the connection wait), and a failure while handling one is answered
UNKNOWN_SERVER_ERROR, counted, and the node serves on."""

from __future__ import annotations

import dataclasses
import itertools
import threading
from pathlib import Path
from typing import Any

import pytest
import trio

from controller.engine import ControllerEngine
from controller.raft import messages as rm
from controller.raft import transitions, wire_requests
from controller.raft.ids import Epoch, NodeId
from controller.server import raft_inbound
from controller.server.daemon import Daemon, DaemonOptions
from controller.server.pending import LARGE_FRAME_BYTES, Pending
from controller.server.quorum import Quorum
from controller.server.quorum_config import QuorumConfig, Voter
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.framing import FrameBuffer
from protocol.messages import describe_quorum as dq
from protocol.registry import decode_response, encode_request

IDS = itertools.count(1)


async def exchange(port: int, request: rm.Request, version: int) -> Any:
    """One quorum RPC over TCP: the decoded answer."""
    body = wire_requests.request_to_wire(request, version)
    correlation = next(IDS)
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(encode_request(body, version, correlation))
        frames = FrameBuffer(1 << 20)
        while True:
            data = await stream.receive_some(65536)
            assert data, "the daemon closed the connection"
            ready, _ = frames.receive_frames(data)
            if ready:
                header, answer = decode_response(ready[0], body.API.key, version)
                assert header.correlation_id == correlation
                return answer


async def test_a_failure_handling_one_request_is_answered_and_the_node_serves_on(tmp_path: Path) -> None:
    engine = ControllerEngine.load(tmp_path / "data", fsync=False)
    daemon = Daemon(engine, DaemonOptions(port=0))
    node = daemon.quorum.node
    handle = node.handle

    def failing(now_ms: int, event: object) -> list[object]:
        request = getattr(event, "request", None)
        if isinstance(request, rm.BeginQuorumEpochRequest):
            raise RuntimeError("a bug in the core")
        return handle(now_ms, event)  # type: ignore[arg-type]

    async with trio.open_nursery() as nursery:
        port = await nursery.start(daemon.run)
        node.handle = failing  # type: ignore[method-assign]
        epoch = Epoch(node.epoch)
        begin = rm.BeginQuorumEpochRequest(None, NodeId(2), Epoch(epoch + 1), NodeId(1))
        answer = await exchange(port, begin, 1)
        assert answer.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
        fetch = rm.FetchRequest(None, NodeId(42), epoch, 0, Epoch(0), -1, 0)  # an observer's
        answer = await exchange(port, fetch, 17)
        assert answer.error_code == ErrorCode.NONE
        assert node.is_leader and node.epoch == epoch
        rendered = daemon.metrics.render().decode()
        assert 'fencer_request_failures_total{stage="raft"} 1.0' in rendered
        await daemon.shutdown()
        nursery.cancel_scope.cancel()


def pending() -> Pending:
    return Pending(1, "127.0.0.1:1", b"", None, 0, 0)  # what the quorum does with it is patched out


async def test_a_full_queue_takes_nothing_more_until_the_quorums_task_makes_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(raft_inbound, "INBOUND_QUEUE_LIMIT", 2)
    engine = ControllerEngine.load(tmp_path / "data", fsync=False)
    inbound = Quorum(QuorumConfig(1, (Voter(1, "127.0.0.1", 9093),)), engine).inbound
    served: list[Pending] = []
    inbound._receive = served.append  # type: ignore[method-assign]
    alone, first, second, third = (pending() for _ in range(4))
    assert inbound.submit(alone) and served == [alone]  # nothing ahead of it: handled at once
    inbound._busy = True  # the quorum's task answers a large request (it waits for a thread)
    assert inbound.submit(first) and inbound.submit(second) and served == [alone]  # queued behind it
    assert not inbound.submit(third) and inbound.queued == 2  # full: the connection must wait
    inbound._busy = False
    waited = trio.Event()

    async def connection() -> None:
        await inbound.wait_for_room()
        assert inbound.submit(third)
        waited.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(connection)
        await trio.testing.wait_all_tasks_blocked()
        assert not waited.is_set()  # still waiting: nothing was taken off the queue
        nursery.start_soon(inbound.serve)
        await waited.wait()
        await trio.testing.wait_all_tasks_blocked()
        assert served == [alone, first, second, third] and inbound.queued == 0
        nursery.cancel_scope.cancel()
    engine.close()


async def test_a_describe_quorum_of_a_million_bytes_is_answered_per_partition_off_the_event_loop(
    tmp_path: Path,
) -> None:
    """DescribeQuorum naming other topics is answered UNKNOWN_TOPIC_OR_PARTITION per partition, as
    Kafka does; over a megabyte, that answer is built in a worker thread (25 MB of them held the
    event loop for seconds before)."""
    engine = ControllerEngine.load(tmp_path / "data", fsync=False)
    daemon = Daemon(engine, DaemonOptions(port=0))
    topics = tuple(
        dq.DescribeQuorumRequestTopicData(
            topic_name=f"t{i}",
            partitions=tuple(dq.DescribeQuorumRequestPartitionData(partition_index=j) for j in range(500)),
        )
        for i in range(600)
    )
    request = dq.DescribeQuorumRequest(topics=topics)
    frame = encode_request(request, 1, 7)
    assert len(frame) > LARGE_FRAME_BYTES
    threads: list[str] = []
    build = raft_inbound.describe_quorum

    def recorded(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return build(*args)

    async with trio.open_nursery() as nursery:
        port = await nursery.start(daemon.run)
        raft_inbound.describe_quorum = recorded  # type: ignore[attr-defined]
        try:
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            async with stream:
                await stream.send_all(frame)
                frames = FrameBuffer(1 << 30)
                while not (ready := frames.receive_frames(await stream.receive_some(1 << 20))[0]):
                    pass
            _, answer = decode_response(ready[0], ApiKey.DESCRIBE_QUORUM, 1)
        finally:
            raft_inbound.describe_quorum = build  # type: ignore[attr-defined]
        codes = {p.error_code for t in answer.topics for p in t.partitions}
        assert len(answer.topics) == 600 and codes == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert threads and threads[0] != threading.main_thread().name
        await daemon.shutdown()
        nursery.cancel_scope.cancel()


async def test_a_resigned_leader_names_no_controller(tmp_path: Path) -> None:
    """A leader that resigned its epoch (check-quorum, after a pause) still is that epoch's leader
    to the Raft core; NOT_CONTROLLER answers must not send brokers back to it."""
    engine = ControllerEngine.load(tmp_path / "data", fsync=False)
    voters = (Voter(1, "127.0.0.1", 9093), Voter(2, "127.0.0.1", 9094), Voter(3, "127.0.0.1", 9095))
    quorum = Quorum(QuorumConfig(1, voters), engine)
    node = quorum.node
    node.start(0)
    transitions.to_prospective(node, 0)
    transitions.to_candidate(node, 0)
    node.state = dataclasses.replace(node.state, tally=node.state.tally.record(NodeId(2), True))  # type: ignore[arg-type, call-arg, union-attr]
    transitions.to_leader(node, 0)
    assert quorum.leader_id == 1
    transitions.to_resigned(node, 10)
    assert node.leader_id == 1 and quorum.leader_id is None
    engine.close()
