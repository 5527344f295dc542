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
"""

from __future__ import annotations

from protocol.error_codes import ErrorCode, error_name
from protocol.messages.alter_partition import AlterPartitionResponse
from protocol.messages.alter_replica_state import AlterReplicaStateResponse
from protocol.messages.create_topics import CreateTopicsResponse
from protocol.messages.delete_topics import DeleteTopicsResponse
from protocol.messages.elect_leaders import ElectLeadersResponse
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
