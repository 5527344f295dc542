"""The link to another voter (controller.server.peer_link) over trio's memory streams: the
runtime's `open_tcp_stream` hands the link one end, a scripted voter speaks Kafka's frames on the
other. What the driver hears: each request's answer (`received`) or its failure (`failed`); after
a connection attempt fails, failures at once (no connection tried) until the reconnect backoff has
passed; a connection that breaks mid-exchange fails its request and the next opens a new one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
import trio
import trio.testing

from controller import runtime
from controller.raft import Epoch, NodeId
from controller.raft import messages as rm
from controller.raft.wire_requests import request_from_wire
from controller.raft.wire_responses import response_to_wire
from controller.server.peer_link import RECONNECT_BACKOFF_MS, PeerLink
from controller.server.quorum_config import Voter
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.framing import FrameBuffer
from protocol.messages.api_versions import ApiVersionsResponse, ApiVersionsResponseApiVersion
from protocol.registry import decode_request, encode_response

PEER = Voter(2, "voter-2.example", 9093)
#: what the scripted voter answers each Raft request with (the request -> the core's answer)
Answer = Callable[[rm.Request], rm.Response]


def granted(request: rm.Request) -> rm.Response:
    assert isinstance(request, rm.VoteRequest)
    return rm.VoteResponse(ErrorCode.NONE, None, request.candidate_epoch, True)


def vote(epoch: int) -> rm.VoteRequest:
    return rm.VoteRequest("cluster", Epoch(epoch), NodeId(1), NodeId(2), Epoch(0), 0)


class Driver:
    """What the link calls back: each answer or failure, in order."""

    class _Config:
        request_timeout_ms = 2000

    class _Node:
        def __init__(self) -> None:
            self.config = Driver._Config()

    def __init__(self) -> None:
        self.node = Driver._Node()
        self.tls = None
        self.heard: list[tuple[str, int, Any]] = []
        self.changed = trio.Event()

    def received(self, source: int, correlation_id: int, response: rm.Response) -> None:
        self.heard.append(("received", correlation_id, response))
        self.changed.set()

    def failed(self, destination: int, correlation_id: int) -> None:
        self.heard.append(("failed", correlation_id, None))
        self.changed.set()

    async def hears(self, count: int) -> list[tuple[str, int, Any]]:
        with trio.fail_after(30):
            while len(self.heard) < count:
                self.changed = trio.Event()
                await self.changed.wait()
        return self.heard


class Voters(runtime.OperatingSystem):
    """The network as the link sees it: each connection it opens is a memory stream whose other
    end a scripted voter serves (`answer`; `hang_up_after`: it closes the connection after that
    many Raft requests, unanswered; `wrong_correlation`: it answers with another correlation id;
    `refusing`: connections are refused)."""

    def __init__(self, nursery: trio.Nursery, answer: Answer, hang_up_after: int | None = None) -> None:
        self.nursery = nursery
        self.answer = answer
        self.hang_up_after = hang_up_after
        self.wrong_correlation = False
        self.refusing = False
        self.connections: list[tuple[str, int]] = []  # every attempt, refused ones included

    async def open_tcp_stream(self, host: str, port: int) -> trio.abc.Stream:
        self.connections.append((host, port))
        if self.refusing:
            raise ConnectionRefusedError(111, "Connection refused")
        ours, theirs = trio.testing.memory_stream_pair()
        self.nursery.start_soon(self._serve, theirs)
        return ours

    async def _serve(self, stream: trio.abc.Stream) -> None:
        frames = FrameBuffer()
        served = 0
        async with stream:
            while True:
                while (payload := frames.next_frame()) is None:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    frames.receive_data(data)
                request = decode_request(payload)
                header = request.header
                if request.api_key == ApiKey.API_VERSIONS:
                    keys = (ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH, ApiKey.FETCH)
                    body: Any = ApiVersionsResponse(
                        api_keys=tuple(
                            ApiVersionsResponseApiVersion(api_key=k, min_version=0, max_version=2) for k in keys
                        )
                    )
                else:
                    if self.hang_up_after is not None and served >= self.hang_up_after:
                        return  # closes the connection, the request unanswered
                    served += 1
                    raft_request = request_from_wire(request.api_key, header.request_api_version, request.body)
                    body = response_to_wire(self.answer(raft_request))
                correlation = header.correlation_id + (1 if self.wrong_correlation else 0)
                await stream.send_all(encode_response(body, header.request_api_version, correlation))


async def linked(
    nursery: trio.Nursery, voters: Voters, requests: Sequence[tuple[int, rm.Request]]
) -> tuple[PeerLink, Driver]:
    driver = Driver()
    link = PeerLink(driver, PEER)  # type: ignore[arg-type]
    with runtime.use(voters):
        nursery.start_soon(link.run)
    for correlation_id, request in requests:
        link.submit(correlation_id, request)
    return link, driver


async def test_requests_go_one_at_a_time_over_one_connection_and_their_answers_reach_the_driver() -> None:
    async with trio.open_nursery() as nursery:
        voters = Voters(nursery, granted)
        _, driver = await linked(nursery, voters, [(7, vote(3)), (8, vote(4))])
        heard = await driver.hears(2)
        nursery.cancel_scope.cancel()
    assert [(kind, correlation) for kind, correlation, _ in heard] == [("received", 7), ("received", 8)]
    assert heard[0][2] == rm.VoteResponse(ErrorCode.NONE, None, Epoch(3), True)
    assert heard[1][2] == rm.VoteResponse(ErrorCode.NONE, None, Epoch(4), True)
    assert voters.connections == [(PEER.host, PEER.port)]  # ApiVersions once, then both requests


def test_a_voter_that_cannot_be_reached_fails_the_request_and_the_link_waits_its_backoff() -> None:
    clock = trio.testing.MockClock(autojump_threshold=0)
    done: list[tuple[str, int, Any]] = []
    connections: list[tuple[str, int]] = []

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            voters = Voters(nursery, granted)
            voters.refusing = True
            link, driver = await linked(nursery, voters, [(1, vote(1))])
            await driver.hears(1)
            # within the backoff: failed at once, no connection tried
            link.submit(2, vote(1))
            await driver.hears(2)
            assert len(voters.connections) == 1
            # once it has passed: connected again, and answered
            voters.refusing = False
            await trio.sleep(RECONNECT_BACKOFF_MS / 1000)
            link.submit(3, vote(2))
            done.extend(await driver.hears(3))
            connections.extend(voters.connections)
            nursery.cancel_scope.cancel()

    trio.run(main, clock=clock)
    assert [(kind, correlation) for kind, correlation, _ in done] == [("failed", 1), ("failed", 2), ("received", 3)]
    assert len(connections) == 2


@pytest.mark.parametrize("fault", ["wrong-correlation", "hang-up-mid-run"])
async def test_an_answer_the_link_cannot_trust_fails_that_request_and_the_connection(fault: str) -> None:
    async with trio.open_nursery() as nursery:
        voters = Voters(nursery, granted, hang_up_after=1 if fault == "hang-up-mid-run" else None)
        voters.wrong_correlation = fault == "wrong-correlation"
        link, driver = await linked(nursery, voters, [(5, vote(1)), (6, vote(2))])
        heard = await driver.hears(2)
        nursery.cancel_scope.cancel()
    kinds = [(kind, correlation) for kind, correlation, _ in heard]
    if fault == "wrong-correlation":  # each request on a connection of its own, each dropped
        assert kinds == [("failed", 5), ("failed", 6)]
        assert link.connection_failures == 2 and len(voters.connections) == 2
    else:
        assert kinds == [("received", 5), ("failed", 6)]
        assert link.connection_failures == 1 and len(voters.connections) == 1
