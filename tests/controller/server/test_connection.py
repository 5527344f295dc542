"""One client connection of the daemon, over a real socket pair, against a host that plays the writer.

The host records what the connection hands over and answers when the test says so, which makes
the orderings that are hard to hit through the whole daemon explicit: a frame pipelined behind a
request in flight, bytes after the peer's end of stream, a response larger than the socket buffer,
refusing a bad frame only once the request before it is answered, a peer gone before its answer,
and a shutdown with a request in flight. Its bounds are in test_connection_bounds.py.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

from protocol.framing import frame
from protocol.messages.api_versions import ApiVersionsResponse
from protocol.messages.begin_quorum_epoch import BeginQuorumEpochRequest
from protocol.messages.describe_quorum import DescribeQuorumRequest
from protocol.messages.end_quorum_epoch import EndQuorumEpochRequest
from protocol.messages.fetch import FetchRequest
from protocol.messages.fetch_snapshot import FetchSnapshotRequest
from protocol.messages.update_metadata import UpdateMetadataRequest, UpdateMetadataRequestBroker
from protocol.messages.vote import VoteRequest
from protocol.registry import decode_response, encode_request
from protocol.spec import Data

from .connection_peer import Host, Pair, closed_by_daemon, correlation_of, open_pair, read_frames, request


@pytest.fixture
async def pair(nursery: trio.Nursery) -> AsyncIterator[Pair]:
    opened = open_pair(Host(), nursery)
    yield opened
    opened.peer.close()


async def test_pipelined_frames_wait_behind_the_request_in_flight(pair: Pair) -> None:
    pair.peer.sendall(request(1) + request(2) + request(3))
    first = await pair.host.next_request(1)
    await trio.sleep(0.05)
    assert len(pair.host.submitted) == 1, "a frame was handed over while the one before it was unanswered"
    pair.host.answer(first)
    second = await pair.host.next_request(2)
    pair.host.answer(second)
    third = await pair.host.next_request(3)
    pair.host.answer(third)
    answers = await read_frames(pair.peer, 3)
    assert [correlation_of(answer) for answer in answers] == [1, 2, 3]
    await trio.testing.wait_all_tasks_blocked()  # the last exchange finished by the connection's task
    assert [p.request.header.correlation_id for p in pair.host.answers if p.request] == [1, 2, 3]
    assert not pair.connection.busy


async def test_the_end_of_the_peers_stream_still_gets_every_answer(pair: Pair) -> None:
    pair.peer.sendall(request(1) + request(2))
    pair.peer.shutdown(socket.SHUT_WR)
    pair.host.answer(await pair.host.next_request(1))
    pair.host.answer(await pair.host.next_request(2))
    answers = await read_frames(pair.peer, 2)
    assert [correlation_of(answer) for answer in answers] == [1, 2]
    assert await closed_by_daemon(pair)
    assert pair.host.unanswered_ == []


async def test_a_bad_frame_behind_a_good_one_is_refused_after_its_answer(pair: Pair) -> None:
    pair.peer.sendall(request(1) + frame(b"\x03\xe7\x00\x00garbage"))  # api key 999
    first = await pair.host.next_request(1)
    assert pair.host.invalid == []
    pair.host.answer(first)
    answers = await read_frames(pair.peer, 1)
    assert [correlation_of(answer) for answer in answers] == [1]
    assert await closed_by_daemon(pair)
    assert pair.host.invalid == ["unknown_api"]
    assert len(pair.host.submitted) == 1


@pytest.mark.parametrize("version", [0, 5, 8])
async def test_update_metadata_is_refused_as_an_unknown_api(pair: Pair, version: int) -> None:
    """The codec decodes UpdateMetadata (for analytics), but the controller does not serve it: a
    well-formed one is refused as api key 6 always was, like an api key nobody knows (999) — no
    answer, the connection closed, counted as unknown_api, nothing handed to the writer."""
    body = UpdateMetadataRequest(
        controller_id=1, controller_epoch=2, live_brokers=(UpdateMetadataRequestBroker(id_=1),)
    )
    pair.peer.sendall(encode_request(body, version, correlation_id=5))
    assert await closed_by_daemon(pair)  # and nothing was sent before the close
    assert pair.host.invalid == ["unknown_api"]
    assert pair.host.invalid_details == [f"unknown api key 6 (version {version})"]
    assert pair.host.submitted == [] and pair.host.answers == []


RAFT_REQUESTS: list[tuple[Data, int]] = [
    *((VoteRequest(topics=()), version) for version in (0, 1, 2)),
    *((BeginQuorumEpochRequest(topics=()), version) for version in (0, 1)),
    *((EndQuorumEpochRequest(topics=()), version) for version in (0, 1)),
    *((DescribeQuorumRequest(topics=()), version) for version in (0, 2)),
    *((FetchSnapshotRequest(topics=()), version) for version in (0, 1)),
    *((FetchRequest(max_wait_ms=500, min_bytes=1, topics=()), version) for version in (13, 17)),
]


@pytest.mark.parametrize(("body", "version"), RAFT_REQUESTS, ids=[f"{b.API.key}-v{v}" for b, v in RAFT_REQUESTS])
async def test_raft_rpcs_are_handed_on_like_any_served_api(pair: Pair, body: Data, version: int) -> None:
    """KRaft's Raft RPCs are served by every node (the quorum): the connection hands them on (the
    daemon's router gives them to the quorum)."""
    pair.peer.sendall(encode_request(body, version, correlation_id=5))
    pending = await pair.host.next_request(1)
    assert pending.request is not None and pending.request.body == body
    assert pair.host.invalid == []


@pytest.mark.parametrize("version", [0, 4, 12])
async def test_a_fetch_below_v13_is_refused_as_an_unsupported_version(pair: Pair, version: int) -> None:
    """The controller serves Fetch from v13 (the metadata topic by id), as ApiVersions says."""
    pair.peer.sendall(encode_request(FetchRequest(max_wait_ms=500, min_bytes=1, topics=()), version, correlation_id=5))
    assert await closed_by_daemon(pair)
    assert pair.host.invalid == ["unsupported_version"]
    assert pair.host.submitted == [] and pair.host.answers == []


async def test_api_versions_at_an_unknown_version_is_answered_by_the_connection(pair: Pair) -> None:
    pair.peer.sendall(frame(b"\x00\x12\x00\x63\x00\x00\x00\x2a\xff\xff"))  # ApiVersions v99, correlation 42
    (payload,) = await read_frames(pair.peer, 1)
    header, response = decode_response(payload, 18, 0)
    assert header.correlation_id == 42
    assert isinstance(response, ApiVersionsResponse) and response.error_code == 35
    assert pair.host.submitted == []


async def test_a_response_larger_than_the_socket_buffer_is_sent_whole(pair: Pair) -> None:
    pair.peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    pair.peer.sendall(request(1) + request(2))
    first = await pair.host.next_request(1)
    big = (4_000_000).to_bytes(4, "big") + (1).to_bytes(4, "big") + bytes(range(256)) * 15_625
    pair.host.answer(first, big)
    assert pair.connection.in_flight is first, "the answer cannot have fit in the socket buffer"
    await trio.sleep(0.05)
    assert len(pair.host.submitted) == 1, "the next request started before the answer was sent"
    received = bytearray()
    with trio.fail_after(10):
        while len(received) < len(big):
            await trio.lowlevel.wait_readable(pair.peer)
            received += pair.peer.recv(1 << 20)
    assert bytes(received) == big
    pair.host.answer(await pair.host.next_request(2))
    (second,) = await read_frames(pair.peer, 1)
    assert correlation_of(second) == 2
    await trio.testing.wait_all_tasks_blocked()  # the exchange finished by the connection's task
    assert [p.request.header.correlation_id for p in pair.host.answers if p.request] == [1, 2]


async def test_a_peer_gone_before_its_answer_leaves_it_unanswered(pair: Pair) -> None:
    pair.peer.sendall(request(1))
    pending = await pair.host.next_request(1)
    pair.peer.close()
    await trio.sleep(0.05)
    assert not pair.done.is_set(), "an end of stream must still wait for the answer in flight"
    pair.host.answer(pending)  # the write fails: the peer is gone
    with trio.fail_after(5):
        await pair.done.wait()
    assert pair.host.unanswered_ == [pending]
    assert pair.host.answers == []


async def test_an_oversized_prefix_behind_a_request_is_refused_after_its_answer(pair: Pair) -> None:
    pair.peer.sendall(request(1) + (2**31 - 1).to_bytes(4, "big") + b"x" * 100)
    first = await pair.host.next_request(1)
    await trio.sleep(0.05)
    assert pair.host.invalid == [] and not pair.done.is_set()
    pair.host.answer(first)
    answers = await read_frames(pair.peer, 1)
    assert [correlation_of(answer) for answer in answers] == [1]
    assert await closed_by_daemon(pair)
    assert pair.host.invalid == ["frame_too_large"]


async def test_a_shutdown_answers_the_request_in_flight_and_drops_what_waits_behind_it(pair: Pair) -> None:
    pair.peer.sendall(request(1) + request(2))
    first = await pair.host.next_request(1)
    await trio.sleep(0.05)  # the second frame is read and held
    pair.host.draining = True
    pair.connection.stop()
    await trio.sleep(0.05)
    assert not pair.done.is_set(), "closed with a request in flight"
    pair.host.answer(first)
    answers = await read_frames(pair.peer, 1)
    assert [correlation_of(answer) for answer in answers] == [1]
    assert await closed_by_daemon(pair)
    assert len(pair.host.submitted) == 1


async def test_an_idle_cancel_closes_a_connection_with_nothing_in_hand(pair: Pair) -> None:
    pair.peer.sendall(request(1))
    pair.host.answer(await pair.host.next_request(1))
    await read_frames(pair.peer, 1)  # written as it was answered (`Pending.answer`)...
    await trio.testing.wait_all_tasks_blocked()  # ...and the exchange finished by the connection's task
    assert pair.connection.idle_for(trio.current_time() + 100) >= 100
    pair.connection.stop()
    assert await closed_by_daemon(pair)


async def test_thousands_of_pipelined_frames_answered_at_once_do_not_nest(pair: Pair) -> None:
    count = 3000  # each answered by the connection itself (KIP-511 fallback), one after another
    fallback = b"".join(frame(b"\x00\x12\x00\x63" + i.to_bytes(4, "big") + b"\xff\xff") for i in range(count))
    with trio.fail_after(10):
        await trio.to_thread.run_sync(pair.peer.setblocking, True)
        await trio.to_thread.run_sync(pair.peer.sendall, fallback)
        pair.peer.setblocking(False)
    answers = await read_frames(pair.peer, count)
    assert [correlation_of(answer) for answer in answers] == list(range(count))
    assert not pair.done.is_set()


async def test_an_outcome_of_close_unanswered_closes_the_connection_without_an_answer(pair: Pair) -> None:
    """What the writer does for a commit that will never be committed: the connection sends nothing
    (never an answer with NONE), closes, and reports the request unanswered."""
    pair.peer.sendall(request(1) + request(2))
    pending = await pair.host.next_request(1)
    pending.close_unanswered()
    assert await closed_by_daemon(pair)  # nothing was sent before the end of the stream
    assert pair.host.unanswered_ == [pending] and pair.host.answers == []
    assert len(pair.host.submitted) == 1 and pair.host.budget.used == 0
