"""The quorum's RPCs on the wire: the one partition they are about and the versions spoken.

Rules (Kafka's `KafkaRaftClient` and `RaftUtil`):
- Every RPC is about the one partition `__cluster_metadata-0` (Fetch from v13 names it by the
  topic id `METADATA_TOPIC_ID`). A request about anything else is refused before the core sees
  it (`controller.raft.wire_requests`).
- Fetch is served from v13 (`FETCH_VERSIONS`: topic ids, as `__cluster_metadata` is fetched by
  id since Kafka 3.1) to Kafka 3.9's highest, 17.
- A request is sent at the highest version both sides speak (`send_version`), fencer's highest
  (`HIGHEST_VERSIONS`) when the peer's is unknown; a pre-vote needs Vote v2 (KIP-996: Kafka 4.0).
- The wire's bodies come out of the codec as `Data`; each is narrowed to the class its API key
  decodes to (`narrow`) before a field is read, so that the mapping is typed by the protocol's
  dataclasses. Requests are mapped in `controller.raft.wire_requests`, responses in
  `controller.raft.wire_responses`.
"""

from __future__ import annotations

import uuid
from typing import TypeVar

from protocol.api_keys import ApiKey
from protocol.spec import Data

from . import messages as rm

METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka's Uuid.METADATA_TOPIC_ID
METADATA_PARTITION = 0
#: Fetch versions the quorum serves (topic ids; Kafka 3.9's highest is 17)
FETCH_VERSIONS = range(13, 18)
RAFT_API_KEYS = frozenset(
    {ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH, ApiKey.FETCH, ApiKey.FETCH_SNAPSHOT}
)

#: the highest version fencer speaks of each Raft RPC
HIGHEST_VERSIONS: dict[int, int] = {
    ApiKey.VOTE: 2,
    ApiKey.BEGIN_QUORUM_EPOCH: 1,
    ApiKey.END_QUORUM_EPOCH: 1,
    ApiKey.FETCH: FETCH_VERSIONS[-1],
    ApiKey.FETCH_SNAPSHOT: 1,
}

D = TypeVar("D", bound=Data)


def narrow(body: Data, cls: type[D]) -> D:
    """`body` as the class its API key decodes to (a TypeError if it is another)."""
    if not isinstance(body, cls):
        raise TypeError(f"{type(body).__name__} is not a {cls.__name__}")
    return body


def send_version(api_key: int, request: rm.Request, peer_max: int | None) -> int:
    """The version to send `request` at: the highest both sides speak (fencer's highest when the
    peer's is unknown); a pre-vote needs Vote v2."""
    ours = HIGHEST_VERSIONS[api_key]
    return ours if peer_max is None else min(ours, peer_max)
