"""What one decoded exchange says, per API: the broker, its epoch, partitions, shutdown progress,
topic names, listeners.

Purpose: `facts(api_key, request, response)` turns a decoded request body and its decoded
response body (or None) into the plain values the decoded rows hold (`Facts`). One function per
API, in the order of docs/protocol.md; APIs without one contribute only the envelope and the
error.

Rules (also the meaning of the columns; docs/analytics/index.md repeats them):
- broker id: the request's own `broker_id`; null for requests that carry none (LeaderAndIsr and
  StopReplica go *to* a broker: the tables resolve it from the peer's registered listener).
- broker epoch: the request's `broker_epoch` when the version carries one and it is not -1;
  for BrokerRegistration, the epoch the response granted.
- partition rows: one per partition the request names; for ControlledShutdown, one per partition
  the response says remains. A partition's error is its own code in the response, else the
  response's top-level code when that is not 0, else 0 (null without a response). "Asked" epochs
  are the ones the sender put in the request; "granted" ones are the state the controller
  decided (AlterPartition's response, LeaderAndIsr's request). `isr_after` is the granted ISR,
  only when the partition was accepted (LeaderAndIsr: always, it is the controller's state).
- shutdown state: ControlledShutdown, and BrokerHeartbeat with WantShutDown, are "requested",
  "complete" (nothing remains: no error and no remaining partitions, or ShouldShutDown) or
  "rejected" (an error at the top level); null for every other exchange.
- topic names: the (topic id, name) pairs a frame names together (CreateTopics' response,
  LeaderAndIsr v5+ and UpdateMetadata v7+ requests), from which the tables label topics known
  only by id.
- UpdateMetadata (a ZooKeeper-era controller's, as a pcap shows it) gives a partition row per
  partition state, granted like LeaderAndIsr's (its `zk_version` is the partition epoch), with
  the response's top-level error.
- listeners: BrokerRegistration's "host:port" of each listener, from which the tables find the
  broker a LeaderAndIsr or StopReplica went to.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from protocol.error_codes import error_name
from protocol.messages.alter_replica_state import OFFLINE, ONLINE

ZERO_UUID = uuid.UUID(int=0)
REPLICA_STATES = {OFFLINE: "OFFLINE", ONLINE: "ONLINE"}

# One partition row: the values of schema.PARTITION_FIELDS, in that order.
PartitionRow = tuple[
    str | None,  # topic
    str | None,  # topic_id
    int,  # partition
    int | None,  # error_code
    str | None,  # error_name
    int | None,  # leader
    int | None,  # leader_epoch_asked
    int | None,  # leader_epoch_granted
    int | None,  # partition_epoch_asked
    int | None,  # partition_epoch_granted
    list[int] | None,  # isr_requested
    list[int] | None,  # isr_after
    str | None,  # replica_state
]


class Facts(NamedTuple):
    # The list defaults are shared by every instance that does not pass its own: never mutated.
    broker_id: int | None = None
    broker_epoch: int | None = None
    shutdown_state: str | None = None
    partitions: list[PartitionRow] = []
    topic_names: list[tuple[str, str]] = []
    listeners: list[str] = []


NO_FACTS = Facts()


def facts(api_key: int, request: Any, response: Any | None) -> Facts:
    """The facts of one exchange whose request (and response, when not None) decoded."""
    extract = _EXTRACTORS.get(api_key)
    return extract(request, response) if extract else NO_FACTS


def _epoch(value: int) -> int | None:
    return None if value == -1 else value


def _id(topic_id: uuid.UUID) -> str | None:
    return None if topic_id == ZERO_UUID else str(topic_id)


def _name(name: str | None) -> str | None:
    return name or None


def _error(own: int | None, top: int | None) -> int | None:
    """A partition's error: its own code, else the response's top-level one, else None (no response)."""
    if own:
        return own
    if top:
        return top
    return own if own is not None else top


def _row(topic: str | None, topic_id: str | None, partition: int, error: int | None, **values: Any) -> PartitionRow:
    return (
        topic,
        topic_id,
        partition,
        error,
        None if error is None else error_name(error),
        values.get("leader"),
        values.get("leader_epoch_asked"),
        values.get("leader_epoch_granted"),
        values.get("partition_epoch_asked"),
        values.get("partition_epoch_granted"),
        values.get("isr_requested"),
        values.get("isr_after"),
        values.get("replica_state"),
    )


def _top(response: Any | None) -> int | None:
    return None if response is None else int(response.error_code)


# ---------------------------------------------------------------------------- broker requests
def _alter_partition(request: Any, response: Any | None) -> Facts:
    answers = {}
    for topic in response.topics if response is not None else ():
        for answer in topic.partitions:
            answers[(_name(topic.topic_name), _id(topic.topic_id), answer.partition_index)] = answer
    top = _top(response)
    rows = []
    for topic in request.topics:
        name, topic_id = _name(topic.topic_name), _id(topic.topic_id)
        for asked in topic.partitions:
            answer = answers.get((name, topic_id, asked.partition_index))
            error = _error(None if answer is None else answer.error_code, top)
            isr = list(asked.new_isr) or [member.broker_id for member in asked.new_isr_with_epochs]
            granted: dict[str, Any] = {}
            if answer is not None and error == 0:
                granted = {
                    "leader": answer.leader_id,
                    "leader_epoch_granted": answer.leader_epoch,
                    "partition_epoch_granted": answer.partition_epoch,
                    "isr_after": list(answer.isr),
                }
            rows.append(
                _row(
                    name,
                    topic_id,
                    asked.partition_index,
                    error,
                    leader_epoch_asked=asked.leader_epoch,
                    partition_epoch_asked=asked.partition_epoch,
                    isr_requested=isr,
                    **granted,
                )
            )
    return Facts(request.broker_id, _epoch(request.broker_epoch), partitions=rows)


def _alter_replica_state(request: Any, response: Any | None) -> Facts:
    answers = {}
    for topic in response.topics if response is not None else ():
        for answer in topic.partitions:
            answers[(_name(topic.name), _id(topic.topic_id), answer.partition_index)] = answer.error_code
    top = _top(response)
    state = REPLICA_STATES.get(request.new_state, f"UNKNOWN({request.new_state})")
    rows = [
        _row(
            _name(topic.name),
            _id(topic.topic_id),
            partition,
            _error(answers.get((_name(topic.name), _id(topic.topic_id), partition)), top),
            replica_state=state,
        )
        for topic in request.topics
        for partition in topic.partitions
    ]
    return Facts(request.broker_id, _epoch(request.broker_epoch), partitions=rows)


def _controlled_shutdown(request: Any, response: Any | None) -> Facts:
    remaining = list(response.remaining_partitions) if response is not None else []
    top = _top(response)
    rows = [_row(_name(left.topic_name), None, left.partition_index, top) for left in remaining]
    if top is None:
        state = "requested"
    elif top:
        state = "rejected"
    else:
        state = "requested" if remaining else "complete"
    return Facts(request.broker_id, _epoch(request.broker_epoch), state, rows)


def _broker_heartbeat(request: Any, response: Any | None) -> Facts:
    state = None
    if request.want_shut_down:
        if response is None:
            state = "requested"
        elif response.error_code:
            state = "rejected"
        else:
            state = "complete" if response.should_shut_down else "requested"
    return Facts(request.broker_id, _epoch(request.broker_epoch), state)


def _broker_registration(request: Any, response: Any | None) -> Facts:
    granted = None if response is None or response.error_code else _epoch(response.broker_epoch)
    listeners = [f"{listener.host}:{listener.port}" for listener in request.listeners]
    return Facts(request.broker_id, granted, listeners=listeners)


def _create_topics(request: Any, response: Any | None) -> Facts:
    topics: Iterable[Any] = response.topics if response is not None else ()
    names = [(str(topic.topic_id), topic.name) for topic in topics if topic.topic_id != ZERO_UUID]
    return Facts(topic_names=names)


# ---------------------------------------------------------------------------- control requests
def _leader_and_isr(request: Any, response: Any | None) -> Facts:
    answers: dict[tuple[str | None, str | None, int], int] = {}
    if response is not None:
        for error in response.partition_errors:
            answers[(_name(error.topic_name), None, error.partition_index)] = error.error_code
        for topic in response.topics:
            for error in topic.partition_errors:
                answers[(None, _id(topic.topic_id), error.partition_index)] = error.error_code
    top = _top(response)
    rows = []
    states, names = _partition_states(request)
    for topic_name, topic_id, state in states:
        name, id_text = _name(topic_name), _id(topic_id)
        own = answers.get((None, id_text, state.partition_index)) if id_text else None
        if own is None:
            own = answers.get((name, None, state.partition_index))
        rows.append(
            _row(
                name,
                id_text,
                state.partition_index,
                _error(own, top),
                leader=state.leader,
                leader_epoch_granted=state.leader_epoch,
                partition_epoch_granted=state.partition_epoch,
                isr_after=list(state.isr),
            )
        )
    return Facts(None, _epoch(request.broker_epoch), partitions=rows, topic_names=names)


def _partition_states(request: Any) -> tuple[list[tuple[str, uuid.UUID, Any]], list[tuple[str, str]]]:
    """The (topic name, topic id, state) of each partition state of a LeaderAndIsr or UpdateMetadata
    request (ungrouped before v2 / v5, then grouped by topic), and the (id, name) pairs it names."""
    states = [(state.topic_name, ZERO_UUID, state) for state in request.ungrouped_partition_states]
    names = []
    for topic in request.topic_states:
        states += [(topic.topic_name, topic.topic_id, state) for state in topic.partition_states]
        if topic.topic_id != ZERO_UUID and topic.topic_name:
            names.append((str(topic.topic_id), topic.topic_name))
    return states, names


def _update_metadata(request: Any, response: Any | None) -> Facts:
    """A ZooKeeper-era controller's UpdateMetadata: every partition state it tells a broker (the
    controller's state, like LeaderAndIsr's); the response has only a top-level error."""
    top = _top(response)
    states, names = _partition_states(request)
    rows = [
        _row(
            _name(topic_name),
            _id(topic_id),
            state.partition_index,
            _error(None, top),
            leader=state.leader,
            leader_epoch_granted=state.leader_epoch,
            partition_epoch_granted=state.zk_version,
            isr_after=list(state.isr),
        )
        for topic_name, topic_id, state in states
    ]
    return Facts(None, _epoch(request.broker_epoch), partitions=rows, topic_names=names)


def _stop_replica(request: Any, response: Any | None) -> Facts:
    answers = {}
    for error in response.partition_errors if response is not None else ():
        answers[(error.topic_name, error.partition_index)] = error.error_code
    top = _top(response)
    asked: list[tuple[str, int, int | None]] = [
        (partition.topic_name, partition.partition_index, None) for partition in request.ungrouped_partitions
    ]
    for topic in request.topics:
        asked += [(topic.name, index, None) for index in topic.partition_indexes]
    for topic_state in request.topic_states:
        asked += [(topic_state.topic_name, s.partition_index, s.leader_epoch) for s in topic_state.partition_states]
    rows = [
        _row(_name(name), None, index, _error(answers.get((name, index)), top), leader_epoch_asked=epoch)
        for name, index, epoch in asked
    ]
    return Facts(None, _epoch(request.broker_epoch), partitions=rows)


_EXTRACTORS: dict[int, Callable[[Any, Any | None], Facts]] = {
    62: _broker_registration,
    63: _broker_heartbeat,
    19: _create_topics,
    56: _alter_partition,
    7: _controlled_shutdown,
    1000: _alter_replica_state,
    4: _leader_and_isr,
    5: _stop_replica,
    6: _update_metadata,
}
