"""Small tools for the Raft core's unit tests: configured nodes, an election won by hand, and
messages passed between in-memory nodes without a network."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import TypeVar

from controller.raft import (
    Action,
    Batch,
    ElectionState,
    Epoch,
    Event,
    LogFlushed,
    LogView,
    NodeId,
    RaftConfig,
    RaftNode,
    RequestReceived,
    ResponseReceived,
    SendRequest,
    SendResponse,
    Tick,
)
from controller.raft.messages import FetchResponse, Request, Response, VoteRequest, VoteResponse
from protocol.error_codes import ErrorCode

from .simnode import TIMING

VOTERS = frozenset({NodeId(1), NodeId(2), NodeId(3)})
T = TypeVar("T")


def config(node_id: int = 1, voters: Iterable[int] = VOTERS) -> RaftConfig:
    return RaftConfig(NodeId(node_id), frozenset(NodeId(v) for v in voters), "test-cluster", **TIMING)


def started(
    node_id: int = 1,
    election: ElectionState | None = None,
    log: LogView | None = None,
    now: int = 0,
    voters: Iterable[int] = VOTERS,
    seed: int = 0,
) -> tuple[RaftNode, list[Action]]:
    node = RaftNode(config(node_id, voters), random.Random(seed), election, log)
    return node, node.start(now)


def of_type(actions: Sequence[object], kind: type[T]) -> list[T]:
    return [action for action in actions if isinstance(action, kind)]


def requests(actions: Sequence[object], kind: type[T]) -> list[tuple[SendRequest, T]]:
    return [(send, send.request) for send in of_type(actions, SendRequest) if isinstance(send.request, kind)]


def answer(actions: Sequence[object], correlation_id: int) -> Response:
    [response] = [send.response for send in of_type(actions, SendResponse) if send.correlation_id == correlation_id]
    return response


def ask(node: RaftNode, now: int, source: int, request: Request, correlation_id: int = 1000) -> list[Action]:
    return node.handle(now, RequestReceived(NodeId(source), correlation_id, request))


def reply(node: RaftNode, now: int, send: SendRequest, response: Response) -> list[Action]:
    return node.handle(now, ResponseReceived(send.destination, send.correlation_id, response))


def elect(node: RaftNode, now: int) -> list[Action]:
    """Run `node`'s election to the end by granting every (pre-)vote it asks for."""
    deadline = node.next_wakeup_ms(now)
    assert deadline is not None
    actions = node.handle(deadline, Tick())
    everything = list(actions)
    for _ in range(4):
        if node.is_leader:
            return everything
        produced: list[Action] = []
        for send, request in requests(actions, VoteRequest):
            granted = VoteResponse(ErrorCode.NONE, None, request.candidate_epoch, True)
            produced.extend(reply(node, deadline, send, granted))
        everything.extend(produced)
        actions = produced
    assert node.is_leader, node.state
    return everything


def leader_batches(log: LogView, offset: int) -> tuple[Batch, ...]:
    """The batches a leader's shell would send from `offset`: one per epoch run."""
    batches: list[Batch] = []
    starts = [entry.start_offset for entry in log.epochs[1:]] + [log.end_offset]
    for entry, end in zip(log.epochs, starts, strict=True):
        first = max(entry.start_offset, offset)
        if first < end:
            batches.append(Batch(first, end - 1, entry.epoch))
    return tuple(batches)


def with_records(response: Response, leader_log: LogView) -> Response:
    """A leader's FetchResponse with the records its shell would add."""
    if isinstance(response, FetchResponse) and response.records_from_offset is not None:
        return FetchResponse(
            response.error,
            response.leader_id,
            response.leader_epoch,
            response.high_watermark,
            response.log_start_offset,
            response.diverging_epoch,
            response.snapshot_id,
            response.records_from_offset,
            leader_batches(leader_log, response.records_from_offset),
        )
    return response


def exchange(
    nodes: dict[int, RaftNode], now: int, actions_by_node: dict[int, list[Action]], rounds: int = 20
) -> dict[int, list[Action]]:
    """Deliver every request and answer among `nodes` at once (appends flushed at once), until
    none is left; every node's actions, in order."""
    seen: dict[int, list[Action]] = {node_id: list(actions) for node_id, actions in actions_by_node.items()}
    for _ in range(rounds):
        for node_id, actions in list(actions_by_node.items()):
            node = nodes[node_id]
            if node.log.flushed_end_offset < node.log.end_offset:
                flushed = node.handle(now, LogFlushed(node.log.end_offset))
                actions.extend(flushed)
                seen.setdefault(node_id, []).extend(flushed)
        pending = [(sender, action) for sender, actions in actions_by_node.items() for action in actions]
        if not any(isinstance(action, SendRequest | SendResponse) for _, action in pending):
            return seen
        actions_by_node = {}
        for sender, action in pending:
            if isinstance(action, SendRequest) and action.destination in nodes:
                event: Event = RequestReceived(NodeId(sender), action.correlation_id, action.request)
            elif isinstance(action, SendResponse) and action.destination in nodes:
                response = with_records(action.response, nodes[sender].log)
                event = ResponseReceived(NodeId(sender), action.correlation_id, response)
            else:
                continue
            produced = nodes[action.destination].handle(now, event)
            actions_by_node.setdefault(action.destination, []).extend(produced)
            seen.setdefault(action.destination, []).extend(produced)
    return seen


def epoch(value: int) -> Epoch:
    return Epoch(value)
