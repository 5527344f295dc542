"""A controller of a quorum that is not the active one, as the fleet meets it: a real TCP peer that
speaks Kafka's framing with protocol/'s codecs and answers every request with its own response type
carrying NOT_CONTROLLER (41) where that response's schema puts errors (the top level; CreateTopics and
DeleteTopics per topic; ElectLeaders per partition, and at the top level from v1).

`async with not_controller_peer() as peer:` listens on a free port of 127.0.0.1 (`peer.port`) and
counts what it answered by API name (`peer.answered`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial

import trio

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.framing import FrameBuffer
from protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsResponseCreatableTopicResult
from protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicsResponseDeletableTopicResult
from protocol.messages.elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
)
from protocol.registry import api, decode_request, encode_response
from protocol.spec import Data

NOT_CONTROLLER = ErrorCode.NOT_CONTROLLER


def not_controller_answer(api_key: int, version: int, body: Data) -> Data:
    """The answer of a controller that is not the active one, for `body` at `version`."""
    response = api(api_key).response
    if isinstance(body, CreateTopicsRequest):
        results = tuple(
            CreateTopicsResponseCreatableTopicResult(name=topic.name, error_code=NOT_CONTROLLER)
            for topic in body.topics
        )
        return response(topics=results)
    if isinstance(body, DeleteTopicsRequest):
        names = body.topic_names if version < 6 else tuple(topic.name for topic in body.topics)
        results = tuple(
            DeleteTopicsResponseDeletableTopicResult(name=name, error_code=NOT_CONTROLLER) for name in names
        )
        return response(responses=results)
    if isinstance(body, ElectLeadersRequest):
        elections = tuple(
            ElectLeadersResponseReplicaElectionResult(
                topic=wanted.topic,
                partition_result=tuple(
                    ElectLeadersResponsePartitionResult(partition_id=p, error_code=NOT_CONTROLLER)
                    for p in wanted.partitions
                ),
            )
            for wanted in body.topic_partitions or ()
        )
        top = NOT_CONTROLLER if version >= 1 else 0
        return response(error_code=top, replica_election_results=elections)
    return response(error_code=NOT_CONTROLLER)


@dataclass
class NotControllerPeer:
    port: int = 0
    answered: Counter[str] = field(default_factory=Counter)

    async def serve(self, stream: trio.SocketStream) -> None:
        frames = FrameBuffer()
        try:
            async with stream:
                while data := await stream.receive_some(65536):
                    frames.receive_data(data)
                    while (payload := frames.next_frame()) is not None:
                        request = decode_request(payload)
                        answer = not_controller_answer(request.api_key, request.api_version, request.body)
                        self.answered[ApiKey(request.api_key).name] += 1
                        await stream.send_all(encode_response(answer, request.api_version, request.correlation_id))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return  # the fleet moved on and closed its end


@asynccontextmanager
async def not_controller_peer() -> AsyncIterator[NotControllerPeer]:
    peer = NotControllerPeer()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, peer.serve, 0, host="127.0.0.1"))
        peer.port = listeners[0].socket.getsockname()[1]
        yield peer
        nursery.cancel_scope.cancel()
