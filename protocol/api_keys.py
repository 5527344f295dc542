"""The API table: every API fencer speaks, by the key Kafka gave it (fencer's own AlterReplicaState is 1000).

An `IntEnum`, so a key compares, hashes and encodes as the int on the wire; code names an API by
its member (`ApiKey.ALTER_PARTITION`), never by a bare number. Which message classes an API has
is `protocol.registry`'s table. Who serves which API is the controller's choice, not the codec's:
`INBOUND_API_KEYS` / `OUTBOUND_API_KEYS` in `controller.ops.served` (`DECODE_ONLY_API_KEYS`: the
APIs fencer only decodes, from captures of real clusters).
"""

from enum import IntEnum


class ApiKey(IntEnum):
    FETCH = 1
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    ELECT_LEADERS = 43
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    FETCH_SNAPSHOT = 59
    ALTER_PARTITION = 56
    DESCRIBE_CLUSTER = 60
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    ALTER_REPLICA_STATE = 1000
