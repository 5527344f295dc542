"""What an answer's error codes say, wherever the response schema puts them.

Rules:
- `nested_errors`: the error codes below the top level, in the answer's order: AlterPartition's and
  AlterReplicaState's per partition, CreateTopics' and DeleteTopics' per topic, ElectLeaders' per
  partition (protocol/messages/: the other answers the fleet gets carry a top-level code only).
- `not_controller`: the answer came from a controller that is not the active one: NOT_CONTROLLER
  (41) at the top level or anywhere below it. As Kafka's broker does (NodeToControllerRequestThread
  looks for NOT_CONTROLLER among all of an answer's error counts), such an answer is no decision:
  the fleet moves to the next controller of its list and asks again.
- `answer_label`: how a probe's answer is counted in the run's figures: its first error other
  than NONE by name (NONE if there is none), or "no answer" when none came.
- `misfit`: an admin answer that does not fit its request, said in one line: CreateTopics and
  DeleteTopics answer every topic the request names once and no other (DeleteTopics v6 by name
  or by id, as named), ElectLeaders every partition the request names once and no other, as
  Kafka's controller answers, and as every `getErrorResponse` does (NOT_CONTROLLER, an
  authorizer's refusal: the items named, each with the error). Not judged: a request that names
  an item twice (Kafka answers duplicates its own way), and ElectLeaders for every partition
  (null), whose partitions only the log knows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

from protocol.error_codes import ErrorCode, error_name
from protocol.messages.alter_partition import AlterPartitionResponse
from protocol.messages.alter_replica_state import AlterReplicaStateResponse
from protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsResponse
from protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from protocol.messages.elect_leaders import ElectLeadersRequest, ElectLeadersResponse
from protocol.spec import Data


def nested_errors(response: Data) -> list[int]:
    """Error codes below the top level of an answer (see the module rules)."""
    if isinstance(response, AlterPartitionResponse | AlterReplicaStateResponse):
        return [p.error_code for t in response.topics for p in t.partitions]
    if isinstance(response, CreateTopicsResponse):
        return [t.error_code for t in response.topics]
    if isinstance(response, DeleteTopicsResponse):
        return [t.error_code for t in response.responses]
    if isinstance(response, ElectLeadersResponse):
        return [p.error_code for r in response.replica_election_results for p in r.partition_result]
    return []


def not_controller(response: Data) -> bool:
    """Whether the answer says NOT_CONTROLLER, at the top level or below it."""
    return getattr(response, "error_code", 0) == ErrorCode.NOT_CONTROLLER or ErrorCode.NOT_CONTROLLER in nested_errors(
        response
    )


def answer_label(errors: list[int]) -> str:
    """A probe's answer for the run's counts (see the module rules): `errors` is the top level's,
    then those below it, as journalled (empty: no answer came)."""
    return "no answer" if not errors else error_name(next((e for e in errors if e), 0))


def misfit(request: Data, version: int, response: Data) -> str | None:
    """Why an admin answer does not fit its request, or None (see the module rules)."""
    if isinstance(request, CreateTopicsRequest) and isinstance(response, CreateTopicsResponse):
        return _compare("topics", [t.name for t in request.topics], [t.name for t in response.topics])
    if isinstance(request, DeleteTopicsRequest) and isinstance(response, DeleteTopicsResponse):
        if version < 6:
            return _compare("topics", list(request.topic_names), [r.name for r in response.responses])
        named = [("name", t.name) if t.name is not None else ("id", t.topic_id) for t in request.topics]
        answered = [("name", r.name) if ("name", r.name) in named else ("id", r.topic_id) for r in response.responses]
        return _compare("topics", named, answered)
    if isinstance(request, ElectLeadersRequest) and isinstance(response, ElectLeadersResponse):
        if request.topic_partitions is None:
            return None
        asked = [(t.topic, p) for t in request.topic_partitions for p in t.partitions]
        results = response.replica_election_results
        return _compare("partitions", asked, [(r.topic, p.partition_id) for r in results for p in r.partition_result])
    return None


def _compare(what: str, asked: Sequence[Hashable], answered: Sequence[Hashable]) -> str | None:
    if len(set(asked)) != len(asked) or Counter(asked) == Counter(answered):
        return None
    missing = sorted(map(str, (Counter(asked) - Counter(answered)).elements()))
    extra = sorted(map(str, (Counter(answered) - Counter(asked)).elements()))
    return f"the answer does not fit the request's {what}: missing {missing}, not asked or repeated {extra}"
