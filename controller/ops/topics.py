"""CreateTopics and DeleteTopics, with Kafka's striped, rack-aware replica placement.

Rules (docs/semantics.md): a taken name is TOPIC_ALREADY_EXISTS; a replication factor or
partition count <= 0 other than -1 (the default) is INVALID_REPLICATION_FACTOR / INVALID_PARTITIONS;
too few active brokers for the replication factor is INVALID_REPLICATION_FACTOR; a manual
assignment naming a negative or unregistered broker, a duplicate, an empty list, no active
broker, or a replica count unlike the other partitions' is INVALID_REPLICA_ASSIGNMENT. A new
partition's ISR is its active replicas, its leader the first active replica, leader and
partition epochs 0. Placement uses only active brokers and spreads replicas and leaders evenly.
Deletion writes RemoveTopicRecord. Topic ids come from the caller's seeded random source.

Bounds (Kafka's MAX_RECORDS_PER_USER_OP, `config.max_records_per_operation`): a CreateTopics whose
partitions add up to more than it (counted as Kafka's validateTotalNumberOfPartitions does, from
the request's numbers alone, before anything is looked up or allocated per partition), or whose
records would, and a DeleteTopics that would write more RemoveTopicRecords, are refused as a
whole: POLICY_VIOLATION for every topic of the request, nothing written (validate_only too).

Authorization (with an authorizer: `ops.authorization`; Kafka's ControllerApis.createTopics and
deleteTopics): CreateTopics may create every topic with CREATE on the cluster, else each topic
with CREATE on it (LITERAL, wildcard or PREFIXED ACLs); a topic named once and refused is
TOPIC_AUTHORIZATION_FAILED "Authorization failed." (a duplicate stays INVALID_REQUEST, unchecked),
and only the topics allowed count towards the bounds. DeleteTopics needs DELETE on the cluster, or
DESCRIBE and DELETE on each topic, checked on the names given and the names of the ids given:
by name, a topic not describable is TOPIC_AUTHORIZATION_FAILED whether it exists or not (its
existence is not revealed), a describable unknown one UNKNOWN_TOPIC_OR_PARTITION, a describable
one not deletable TOPIC_AUTHORIZATION_FAILED; by id, an unknown id is UNKNOWN_TOPIC_ID, a topic
not deletable TOPIC_AUTHORIZATION_FAILED with its name only if describable. The message is the
error's default, "Topic authorization failed.". Kafka shuffles DeleteTopics results so that their
order reveals nothing; fencer answers in the request's order, which reveals nothing either.
"""

from __future__ import annotations

import itertools
import random
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterator

from protocol.acl_codes import AclOperation, ResourceType
from protocol.error_codes import ErrorCode
from protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicResult,
)
from protocol.messages.delete_topics import (
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseDeletableTopicResult,
)
from protocol.records.metadata import (
    LOST_DIRECTORY,
    METADATA_TOPIC,
    UNASSIGNED_DIRECTORY,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from protocol.spec import ZERO_UUID

from ..state.controller_state import ControllerState, Outcome, RecordAndVersion, Result, Steps
from ..state.model import RECOVERED, partition_record
from ..state.replication import Topic
from .alter_partition import find_topic
from .authorization import UNCHECKED, Access
from .batches import STEP_PARTITIONS
from .changes import versioned
from .placement import place_replicas

_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
MAX_NAME_LENGTH = 249
#: Kafka's messages: validateTotalNumberOfPartitions's, and the PolicyViolationException its
#: controller makes of a BoundedList overflow (more records than MAX_RECORDS_PER_USER_OP).
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."
#: Kafka's messages for a topic the authorizer refuses: ControllerApis.createTopics's own, and
#: DeleteTopics's ApiError(TOPIC_AUTHORIZATION_FAILED) (the error's default message)
CREATE_DENIED = "Authorization failed."
DELETE_DENIED = "Topic authorization failed."


#: Topics a CreateTopics will create: name, id, (partition index, replicas) of each partition.
Created = list[tuple[str, uuid.UUID, list[tuple[int, tuple[int, ...]]]]]


class _Rejected(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def new_topic_id(rng: random.Random) -> uuid.UUID:
    while True:
        topic_id = uuid.UUID(int=rng.getrandbits(128), version=4)
        if topic_id not in (ZERO_UUID, LOST_DIRECTORY):
            return topic_id


def _not_creatable(access: Access, named: Counter[str]) -> set[str]:
    """The topics named once that `access` may not create: none without an authorizer or with
    CREATE on the cluster (which Kafka checks without logging a refusal), else those without
    CREATE on the topic."""
    if access.authorizer is None or access.cluster(AclOperation.CREATE, noted=False):
        return set()
    once = {name for name, count in named.items() if count == 1}
    return once - access.names(AclOperation.CREATE, ResourceType.TOPIC, once)


def _requested_partitions(request: CreateTopicsRequest, default_partitions: int, denied: set[str]) -> int:
    """Kafka's upper bound of the partitions a CreateTopics asks for, from its numbers alone.

    Manual assignments count as listed, -1 as the default count, other non-positive counts as
    nothing (they are refused later); a topic the authorizer refuses, nothing. Python ints: no
    overflow, unlike Kafka's int sum."""
    total = 0
    for topic in request.topics:
        if topic.name in denied:
            continue
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == -1:
            total += default_partitions
        elif topic.num_partitions > 0:
            total += topic.num_partitions
    return total


#: ControllerApis.createTopics' answer to a creation of the metadata log's own topic
INTERNAL_TOPIC = f"Creation of internal topic {METADATA_TOPIC} is prohibited."


def create_topics(
    state: ControllerState,
    request: CreateTopicsRequest,
    version: int,
    rng: random.Random,
    access: Access = UNCHECKED,
) -> Outcome:
    limit = state.config.max_records_per_operation
    named = Counter(topic.name for topic in request.topics)
    denied = _not_creatable(access, named)
    if _requested_partitions(request, state.config.default_partitions, denied) > limit:
        return _refuse_creation(request, TOO_MANY_PARTITIONS, denied)
    created: Created = []
    results = []
    for topic in request.topics:
        try:
            if named[topic.name] > 1:
                raise _Rejected(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")  # ControllerApis' words
            if topic.name == METADATA_TOPIC:  # ControllerApis.createTopics, before authorization
                raise _Rejected(ErrorCode.INVALID_REQUEST, INTERNAL_TOPIC)
            if topic.name in denied:
                raise _Rejected(ErrorCode.TOPIC_AUTHORIZATION_FAILED, CREATE_DENIED)
            assignments = _assignments(state, topic, rng)
        except _Rejected as rejected:
            results.append(
                CreateTopicsResponseCreatableTopicResult(
                    name=topic.name, error_code=rejected.code, error_message=rejected.message
                )
            )
            continue
        topic_id = new_topic_id(rng)
        created.append((topic.name, topic_id, assignments))
        results.append(
            CreateTopicsResponseCreatableTopicResult(
                name=topic.name,
                topic_id=topic_id,
                error_message=None,
                num_partitions=len(assignments),
                replication_factor=len(assignments[0][1]),
            )
        )
    # one TopicRecord per topic and one PartitionRecord per partition, validate_only or not (as Kafka)
    if sum(1 + len(assignments) for _, _, assignments in created) > limit:
        return _refuse_creation(request, TOO_MANY_RECORDS, denied)
    response = CreateTopicsResponse(topics=tuple(results))
    if request.validate_only:
        return Result(response)
    records = _creation_records(state, created)
    if sum(len(assignments) for _, _, assignments in created) <= STEP_PARTITIONS:
        return Result(response, tuple(records))
    return _created_in_steps(records, response)


def _creation_records(state: ControllerState, created: Created) -> Iterator[RecordAndVersion]:
    """A TopicRecord per topic, then its PartitionRecords (built as consumed)."""
    active = set(state.cluster.active_ids())
    for name, topic_id, assignments in created:
        yield versioned(TopicRecord(name=name, topic_id=topic_id))
        for index, replicas in assignments:
            yield versioned(_partition_record(active, topic_id, index, replicas))


def _created_in_steps(records: Iterator[RecordAndVersion], response: CreateTopicsResponse) -> Steps:
    """A large creation: its records built `STEP_PARTITIONS` at a time, with a pause (an empty
    step) between, then written as one atomic batch."""
    batch: list[RecordAndVersion] = []
    while chunk := list(itertools.islice(records, STEP_PARTITIONS)):
        batch.extend(chunk)
        yield []
    yield batch
    return response


def _refuse_creation(request: CreateTopicsRequest, message: str, denied: set[str]) -> Result:
    """The whole request refused: POLICY_VIOLATION for each of its topics (but those the authorizer
    refused, which Kafka answers apart), nothing written."""
    return Result(
        CreateTopicsResponse(
            topics=tuple(
                CreateTopicsResponseCreatableTopicResult(
                    name=topic.name, error_code=ErrorCode.POLICY_VIOLATION, error_message=message
                )
                if topic.name not in denied
                else CreateTopicsResponseCreatableTopicResult(
                    name=topic.name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=CREATE_DENIED
                )
                for topic in request.topics
            )
        )
    )


def _shown(name: str) -> str:
    """A name as an error message quotes it: a name longer than any legal one is cut there, or an
    illegal name of up to 32,767 bytes (a request's STRING) would make a message no answer can hold
    (Kafka's messages quote it whole: its answer then fails to encode, and the client hears nothing)."""
    return name if len(name) <= MAX_NAME_LENGTH else f"{name[:MAX_NAME_LENGTH]}... ({len(name)} characters)"


def _assignments(
    state: ControllerState, topic: CreateTopicsRequestCreatableTopic, rng: random.Random
) -> list[tuple[int, tuple[int, ...]]]:
    if not _LEGAL_NAME.fullmatch(topic.name) or len(topic.name) > MAX_NAME_LENGTH or topic.name in (".", ".."):
        raise _Rejected(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name '{_shown(topic.name)}' is illegal.")
    if state.replication.topic_by_name(topic.name) is not None:
        raise _Rejected(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' already exists.")
    if topic.assignments:
        return _manual(state, topic)
    # Kafka's order: the replication factor first; -1 asks for the default
    if topic.replication_factor < -1 or topic.replication_factor == 0:
        raise _Rejected(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    if topic.num_partitions < -1 or topic.num_partitions == 0:
        raise _Rejected(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
    partitions = state.config.default_partitions if topic.num_partitions == -1 else topic.num_partitions
    factor = state.config.default_replication_factor if topic.replication_factor == -1 else topic.replication_factor
    active = [state.cluster.brokers[b] for b in state.cluster.active_ids()]
    if len(active) < factor:
        raise _Rejected(ErrorCode.INVALID_REPLICATION_FACTOR, _not_enough(state, factor, len(active)))
    placed = place_replicas([(b.broker_id, b.rack) for b in active], partitions, factor, rng)
    return list(enumerate(placed))


def _not_enough(state: ControllerState, factor: int, active: int) -> str:
    prefix = f"Unable to replicate the partition {factor} time(s): "
    if active == 0:
        anyone_shutting_down = any(b.in_controlled_shutdown for b in state.cluster.brokers.values())
        return prefix + (
            "All brokers are currently fenced or in controlled shutdown."
            if anyone_shutting_down
            else "All brokers are currently fenced."
        )
    return (
        prefix
        + f"The target replication factor of {factor} cannot be reached because only {active} broker(s) are active."
    )


def _manual(state: ControllerState, topic: CreateTopicsRequestCreatableTopic) -> list[tuple[int, tuple[int, ...]]]:
    if topic.num_partitions != -1 or topic.replication_factor != -1:
        raise _Rejected(
            ErrorCode.INVALID_REQUEST,
            "Both numPartitions or replicationFactor and replicasAssignments were set. "
            "Both cannot be used at the same time.",
        )
    assignments = sorted((a.partition_index, tuple(a.broker_ids)) for a in topic.assignments)
    if [index for index, _ in assignments] != list(range(len(assignments))):
        raise _Rejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Partitions must be numbered 0 to N-1, each once.")
    for index, replicas in assignments:
        problem = _replica_list_problem(state, replicas, len(assignments[0][1]))
        if problem is not None:
            raise _Rejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Partition {index} {problem}.")
    return assignments


def _replica_list_problem(state: ControllerState, replicas: tuple[int, ...], factor: int) -> str | None:
    """What is wrong with one manually assigned replica list, if anything (Kafka's checks)."""
    if not replicas:
        return "has an empty replica list"
    if len(replicas) != factor:
        return f"has {len(replicas)} replica(s), unlike partition 0's {factor}"
    if len(replicas) > len(state.cluster.brokers):
        # checked before anything per replica: a list of millions costs nothing to refuse
        return f"has {len(replicas)} replicas, more than the {len(state.cluster.brokers)} registered brokers"
    if len(set(replicas)) != len(replicas):
        return "lists a broker twice"
    # a log written before negative broker ids were refused may hold one: never assign it
    negative = [b for b in replicas if b < 0]
    if negative:
        return f"names negative broker id(s) {negative}"
    unknown = [b for b in replicas if state.cluster.get(b) is None]
    if unknown:
        return f"names unregistered broker(s) {unknown}"
    if not any(state.cluster.is_active(b) for b in replicas):
        return "has only fenced brokers or brokers in controlled shutdown"
    return None


def _partition_record(active: set[int], topic_id: uuid.UUID, index: int, replicas: tuple[int, ...]) -> PartitionRecord:
    isr = tuple([broker for broker in replicas if broker in active])
    directories = (UNASSIGNED_DIRECTORY,) * len(replicas)
    return partition_record(index, topic_id, replicas, isr, isr[0], RECOVERED, 0, 0, directories)


def delete_topics(
    state: ControllerState, request: DeleteTopicsRequest, version: int, access: Access = UNCHECKED
) -> Result:
    if version >= 6:
        wanted = [(entry.name, entry.topic_id) for entry in request.topics]
    else:
        wanted = [(name, ZERO_UUID) for name in request.topic_names]
    found = [
        (name, topic_id, find_topic(state, name or "", topic_id, by_id=topic_id != ZERO_UUID))
        for name, topic_id in wanted
    ]
    describable, deletable = _deletion_rights(access, found)
    results = []
    removed: dict[uuid.UUID, None] = {}  # one RemoveTopicRecord per distinct topic, in order
    for name, topic_id, topic in found:
        by_id = topic_id != ZERO_UUID
        if by_id and topic is not None and not deletable(topic.name):
            shown = topic.name if describable(topic.name) else None
            results.append(_deletion_denied(shown, topic_id))
        elif not by_id and not describable(name or ""):
            results.append(_deletion_denied(name, topic_id))
        elif topic is None:
            code = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            results.append(
                DeleteTopicsResponseDeletableTopicResult(
                    name=name, topic_id=topic_id, error_code=code, error_message=code.name
                )
            )
        elif not deletable(topic.name):
            results.append(_deletion_denied(name, topic_id))
        else:
            removed[topic.topic_id] = None
            results.append(DeleteTopicsResponseDeletableTopicResult(name=topic.name, topic_id=topic.topic_id))
    # more records than the bound refuse the whole request
    if len(removed) > state.config.max_records_per_operation:
        refused = tuple(
            DeleteTopicsResponseDeletableTopicResult(
                name=name, topic_id=topic_id, error_code=ErrorCode.POLICY_VIOLATION, error_message=TOO_MANY_RECORDS
            )
            for name, topic_id in wanted
        )
        return Result(DeleteTopicsResponse(responses=refused))
    records = tuple(versioned(RemoveTopicRecord(topic_id=topic_id)) for topic_id in removed)
    return Result(DeleteTopicsResponse(responses=tuple(results)), records)


Found = list[tuple[str | None, uuid.UUID, Topic | None]]


def _deletion_rights(access: Access, found: Found) -> tuple[Callable[[str], bool], Callable[[str], bool]]:
    """Whether a topic name may be described, and deleted, by `access` (everything without an
    authorizer or with DELETE on the cluster, which Kafka checks without logging a refusal). The
    names checked: those given, and those of the ids given that exist."""
    if access.authorizer is None or access.cluster(AclOperation.DELETE, noted=False):
        return _anything, _anything
    names = {name or "" for name, topic_id, _ in found if topic_id == ZERO_UUID}
    names.update(topic.name for _, topic_id, topic in found if topic_id != ZERO_UUID and topic is not None)
    describable = access.names(AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    deletable = access.names(AclOperation.DELETE, ResourceType.TOPIC, names)
    return describable.__contains__, deletable.__contains__


def _anything(name: str) -> bool:
    return True


def _deletion_denied(name: str | None, topic_id: uuid.UUID) -> DeleteTopicsResponseDeletableTopicResult:
    return DeleteTopicsResponseDeletableTopicResult(
        name=name, topic_id=topic_id, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=DELETE_DENIED
    )
