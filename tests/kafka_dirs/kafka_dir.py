"""A KRaft data dir in the shape Apache Kafka 3.9 writes, built from bytes fencer did not produce.

Every record VALUE below is hex written out by hand from Kafka 3.9's schemas
(`../shared/reference/kafka-3.9-message-schemas/*Record.json`, `LeaderChangeMessage.json`,
`Snapshot{Header,Footer}Record.json`): metadata values are Kafka's frame (frame version 1, the
record's apiKey and version as unsigned varints) then the fields in schema order, flexible
encoding (compact strings and arrays: length + 1 as an unsigned varint; tagged fields: a count,
then tag, size, bytes). Control records have Kafka's key (INT16 version 0, INT16 type). They are
framed into record batches v2 by `batch`, a small encoder written here from Kafka's RecordBatch
format (struct and the `crc32c` package), not fencer's `protocol.records.batch_writer`.

The story the log tells (a three-broker cluster, node 1 a combined controller and broker):

    0      LeaderChange (epoch 1)                       control batch
    1-4    Begin("Bootstrap records"), metadata.version 21, ZkMigrationState 0, End
           (the bootstrap transaction, as Kafka 3.9's controller writes it on a new cluster)
    5-6    RegisterController 1, RegisterBroker 1 (epoch 6, fenced, log dir D1)
    7, 8   RegisterBroker 2 (epoch 7), 3 (epoch 8)
    9-11   each unfenced (BrokerRegistrationChange v0, Fenced -1)
    12     NoOp
    13-16  topic `orders`: 3 partitions, RF 3, led by their first replica (PartitionRecord v1)
    17-18  topic `solo`: 1 partition on broker 2
    19, 21 orders-1's ISR shrinks to [2, 1] and grows back to [2, 1, 3] (PartitionChange v1), NoOps between
           -- snapshot 00000000000000000022-0000000001.checkpoint: the state after offset 21
    22     NoOp
    23     LeaderChange (epoch 2: the controller restarted)   control batch
    24     NoOp
    25-28  broker 1's controlled shutdown: InControlledShutdown (v1), its leadership of orders-0 to
           broker 2 (leader epoch 1), out of every ISR
    29     broker 1 fenced
    30-34  broker 2's controlled shutdown: orders-0 and -1 to broker 3, solo-0 leaderless (its
           only replica), out of every multi-member ISR
    35     broker 2 fenced
    36     NoOp: the log ends with broker 3 unfenced (the node stopped while broker 3 ran)

`write_kafka_dir(path)` writes `meta.properties` (version 1 with `directory.id`),
`bootstrap.checkpoint`, and `__cluster_metadata-0/` with the segment, the snapshot, `quorum-state`
(Kafka's QuorumStateData JSON, leaderEpoch 2), `leader-epoch-checkpoint` and `partition.metadata`.
`EXPECTED` is the cluster at the end of the log, worked out by hand from the story.
"""

from __future__ import annotations

import base64
import struct
import uuid
from pathlib import Path

from crc32c import crc32c

# ---------------------------------------------------------------------------- ids (16 bytes each, as hex)
CONTROLLER_INCARNATION = "5f1e7c3a9b2d4e6f8a0b1c2d3e4f5a6b"
INCARNATIONS = {
    1: "6a7b8c9d0e1f42a3b4c5d6e7f8091a2b",
    2: "7b8c9d0e1f2a43b4c5d6e7f8091a2b3c",
    3: "8c9d0e1f2a3b44c5d6e7f8091a2b3c4d",
}
DIRECTORIES = {  # each broker's one log directory (node 1's is this data dir's directory.id)
    1: "1d2e3f405162473894a5b6c7d8e9fa0b",
    2: "2e3f40516273485905b6c7d8e9fa0b1c",
    3: "3f405162738449690617d8e9fa0b1c2d",
}
ORDERS = "9a8b7c6d5e4f40318293a4b5c6d7e8f9"
SOLO = "0f1e2d3c4b5a46978889aabbccddeeff"
D1, D2, D3 = DIRECTORIES[1], DIRECTORIES[2], DIRECTORIES[3]
B1, B2, B3 = INCARNATIONS[1], INCARNATIONS[2], INCARNATIONS[3]
CLUSTER_ID = "Fq3bYkTnQx2m9ZrLc7Vw0g"  # a base64url UUID without padding, as `kafka-storage random-uuid` prints
NODE_ID = 1
BASE_TIMESTAMP_MS = 1_767_261_600_000  # 2026-01-01T10:00:00Z

# ---------------------------------------------------------------------------- strings used below
# fmt: off
# (the hex below keeps one field per piece, its comment beside it: no reformatting)
MV = "11" "6d657461646174612e76657273696f6e"  # compact string "metadata.version" (16 chars: 0x11)
LOCALHOST = "0a" "6c6f63616c686f7374"  # compact string "localhost" (9 chars)
PLAINTEXT = "0a" "504c41494e54455854"  # compact string "PLAINTEXT" (9 chars)

# ---------------------------------------------------------------------------- control records: (key, value)
LEADER_CHANGE_KEY = "0000" "0002"  # version 0, type 2 (LeaderChange)
LEADER_CHANGE = (  # LeaderChangeMessage v0
    "0000"  # Version (int16) 0
    "00000001"  # LeaderId 1
    "02" "00000001" "00"  # Voters: [{VoterId 1, no tags}]
    "02" "00000001" "00"  # GrantingVoters: [{VoterId 1}]
    "00"  # no tagged fields
)
SNAPSHOT_HEADER_KEY = "0000" "0003"
SNAPSHOT_FOOTER_KEY = "0000" "0004"


def snapshot_header(last_contained_ms: int) -> str:
    """SnapshotHeaderRecord v0: Version 0, LastContainedLogTimestamp (int64), no tags."""
    return "0000" + f"{last_contained_ms:016x}" + "00"


SNAPSHOT_FOOTER = "0000" "00"  # SnapshotFooterRecord v0: Version 0, no tags

# ---------------------------------------------------------------------------- metadata record values
BEGIN_BOOTSTRAP = (  # BeginTransactionRecord (23) v0, Name "Bootstrap records" (a tagged field, tag 0)
    "01" "17" "00"  # frame version 1, apiKey 23, version 0
    "01"  # one tagged field
    "00" "12"  # tag 0, 18 bytes
    "12" "426f6f747374726170207265636f726473"  # compact string "Bootstrap records" (17 chars)
)
FEATURE_MV_21 = "01" "0c" "00" + MV + "0015" "00"  # FeatureLevelRecord (12) v0: metadata.version 21 (3.9-IV0)
ZK_MIGRATION_NONE = "01" "15" "00" "00" "00"  # ZkMigrationStateRecord (21) v0: state 0 (NONE)
END_TRANSACTION = "01" "18" "00" "00"  # EndTransactionRecord (24) v0
NO_OP = "01" "14" "00" "00"  # NoOpRecord (20) v0

REGISTER_CONTROLLER = (  # RegisterControllerRecord (27) v0
    "01" "1b" "00"
    "00000001"  # ControllerId 1
    + CONTROLLER_INCARNATION  # IncarnationId
    + "00"  # ZkMigrationReady false
    "02"  # EndPoints: 1
    "0b" "434f4e54524f4c4c4552"  # Name "CONTROLLER"
    + LOCALHOST
    + "2385"  # Port 9093
    "0000"  # SecurityProtocol 0 (PLAINTEXT)
    "00"  # endpoint tags
    "03"  # Features: 2
    + MV
    + "0001" "0015" "00"  # metadata.version 1..21
    "0e" "6b726166742e76657273696f6e"  # "kraft.version"
    "0000" "0001" "00"  # 0..1
    "00"  # no tagged fields
)


def _register_broker(broker_id: str, incarnation: str, epoch: str, port: str, fenced: str, directory: str) -> str:
    """RegisterBrokerRecord (0) v3, fields in schema order; every argument is hex."""
    return (
        "01" "00" "03"
        + broker_id  # BrokerId (int32)
        + "00"  # IsMigratingZkBroker false (v2+)
        + incarnation  # IncarnationId
        + epoch  # BrokerEpoch (int64)
        + "02"  # EndPoints: 1
        + PLAINTEXT
        + LOCALHOST
        + port  # Port (uint16)
        + "0000"  # SecurityProtocol
        + "00"  # endpoint tags
        + "02"  # Features: 1
        + MV
        + "0001" "0015" "00"  # metadata.version 1..21
        + "00"  # Rack null
        + fenced  # Fenced (bool)
        + "00"  # InControlledShutdown false
        + "01"  # one tagged field
        + "00" "11"  # tag 0 (LogDirs), 17 bytes
        + "02"  # compact array of 1 uuid
        + directory
    )


# the registrations as the log has them (fenced), then as the snapshot has them (unfenced since)
REGISTER_BROKER_1 = _register_broker("00000001", B1, "0000000000000006", "2384", "01", D1)  # port 9092
REGISTER_BROKER_2 = _register_broker("00000002", B2, "0000000000000007", "23e8", "01", D2)  # port 9192
REGISTER_BROKER_3 = _register_broker("00000003", B3, "0000000000000008", "244c", "01", D3)  # port 9292
SNAPSHOT_BROKER_1 = _register_broker("00000001", B1, "0000000000000006", "2384", "00", D1)
SNAPSHOT_BROKER_2 = _register_broker("00000002", B2, "0000000000000007", "23e8", "00", D2)
SNAPSHOT_BROKER_3 = _register_broker("00000003", B3, "0000000000000008", "244c", "00", D3)

# BrokerRegistrationChangeRecord (17): BrokerId, BrokerEpoch, then tagged Fenced (tag 0) / InControlledShutdown (tag 1)
UNFENCE_1 = "01" "11" "00" "00000001" "0000000000000006" "01" "00" "01" "ff"  # v0, Fenced -1
UNFENCE_2 = "01" "11" "00" "00000002" "0000000000000007" "01" "00" "01" "ff"
UNFENCE_3 = "01" "11" "00" "00000003" "0000000000000008" "01" "00" "01" "ff"
SHUTTING_DOWN_1 = "01" "11" "01" "00000001" "0000000000000006" "01" "01" "01" "01"  # v1, InControlledShutdown 1
SHUTTING_DOWN_2 = "01" "11" "01" "00000002" "0000000000000007" "01" "01" "01" "01"
FENCE_1 = "01" "11" "00" "00000001" "0000000000000006" "01" "00" "01" "01"  # v0, Fenced 1
FENCE_2 = "01" "11" "00" "00000002" "0000000000000007" "01" "00" "01" "01"

TOPIC_ORDERS = "01" "02" "00" "07" "6f7264657273" + ORDERS + "00"  # TopicRecord (2) v0: "orders"
TOPIC_SOLO = "01" "02" "00" "05" "736f6c6f" + SOLO + "00"  # TopicRecord v0: "solo"


def _partition(index: str, topic: str, replicas: str, isr: str, leader: str, epochs: str, directories: str) -> str:
    """PartitionRecord (3) v1: PartitionId, TopicId, Replicas, Isr, RemovingReplicas [], AddingReplicas [],
    Leader, (LeaderRecoveryState 0: a tagged default, left out), LeaderEpoch + PartitionEpoch (`epochs`),
    Directories; every argument is hex (arrays with their compact length)."""
    return "01" "03" "01" + index + topic + replicas + isr + "01" "01" + leader + epochs + directories + "00"


ORDERS_0 = _partition(
    "00000000", ORDERS, "04" "00000001" "00000002" "00000003", "04" "00000001" "00000002" "00000003",
    "00000001", "00000000" "00000000", "04" + D1 + D2 + D3,
)
ORDERS_1 = _partition(
    "00000001", ORDERS, "04" "00000002" "00000003" "00000001", "04" "00000002" "00000003" "00000001",
    "00000002", "00000000" "00000000", "04" + D2 + D3 + D1,
)
ORDERS_2 = _partition(
    "00000002", ORDERS, "04" "00000003" "00000001" "00000002", "04" "00000003" "00000001" "00000002",
    "00000003", "00000000" "00000000", "04" + D3 + D1 + D2,
)
SOLO_0 = _partition("00000000", SOLO, "02" "00000002", "02" "00000002", "00000002", "00000000" "00000000", "02" + D2)
# orders-1 as the snapshot at offset 22 has it: ISR [2, 1, 3], partition epoch 2
SNAPSHOT_ORDERS_1 = _partition(
    "00000001", ORDERS, "04" "00000002" "00000003" "00000001", "04" "00000002" "00000001" "00000003",
    "00000002", "00000000" "00000002", "04" + D2 + D3 + D1,
)


def _change(index: str, topic: str, tagged: str) -> str:
    """PartitionChangeRecord (5) v1: PartitionId, TopicId, then the tagged fields (count, tag, size, bytes)."""
    return "01" "05" "01" + index + topic + tagged


# tag 0: Isr (compact int32 array); tag 1: Leader (int32)
ORDERS_1_SHRINK = _change("00000001", ORDERS, "01" "00" "09" "03" "00000002" "00000001")  # ISR [2, 1]
ORDERS_1_EXPAND = _change("00000001", ORDERS, "01" "00" "0d" "04" "00000002" "00000001" "00000003")  # [2, 1, 3]
# broker 1's controlled shutdown
ORDERS_0_TO_2 = _change("00000000", ORDERS, "02" "00" "09" "03" "00000002" "00000003" "01" "04" "00000002")
ORDERS_1_WITHOUT_1 = _change("00000001", ORDERS, "01" "00" "09" "03" "00000002" "00000003")
ORDERS_2_WITHOUT_1 = _change("00000002", ORDERS, "01" "00" "09" "03" "00000003" "00000002")
# broker 2's controlled shutdown
ORDERS_0_TO_3 = _change("00000000", ORDERS, "02" "00" "05" "02" "00000003" "01" "04" "00000003")
ORDERS_1_TO_3 = _change("00000001", ORDERS, "02" "00" "05" "02" "00000003" "01" "04" "00000003")
ORDERS_2_WITHOUT_2 = _change("00000002", ORDERS, "01" "00" "05" "02" "00000003")
SOLO_0_LEADERLESS = _change("00000000", SOLO, "01" "01" "04" "ffffffff")  # Leader -1, the ISR [2] kept
# fmt: on

# ---------------------------------------------------------------------------- the log, batch by batch
#: (base offset, epoch, control, records as (key hex or None, value hex))
Batch = tuple[int, int, bool, list[tuple[str | None, str]]]


def _data(*values: str) -> list[tuple[str | None, str]]:
    return [(None, value) for value in values]


LOG: list[Batch] = [
    (0, 1, True, [(LEADER_CHANGE_KEY, LEADER_CHANGE)]),
    (1, 1, False, _data(BEGIN_BOOTSTRAP, FEATURE_MV_21, ZK_MIGRATION_NONE, END_TRANSACTION)),
    (5, 1, False, _data(REGISTER_CONTROLLER, REGISTER_BROKER_1)),
    (7, 1, False, _data(REGISTER_BROKER_2)),
    (8, 1, False, _data(REGISTER_BROKER_3)),
    (9, 1, False, _data(UNFENCE_1)),
    (10, 1, False, _data(UNFENCE_2)),
    (11, 1, False, _data(UNFENCE_3)),
    (12, 1, False, _data(NO_OP)),
    (13, 1, False, _data(TOPIC_ORDERS, ORDERS_0, ORDERS_1, ORDERS_2)),
    (17, 1, False, _data(TOPIC_SOLO, SOLO_0)),
    (19, 1, False, _data(ORDERS_1_SHRINK)),
    (20, 1, False, _data(NO_OP)),
    (21, 1, False, _data(ORDERS_1_EXPAND)),
    (22, 1, False, _data(NO_OP)),
    (23, 2, True, [(LEADER_CHANGE_KEY, LEADER_CHANGE)]),
    (24, 2, False, _data(NO_OP)),
    (25, 2, False, _data(SHUTTING_DOWN_1, ORDERS_0_TO_2, ORDERS_1_WITHOUT_1, ORDERS_2_WITHOUT_1)),
    (29, 2, False, _data(FENCE_1)),
    (30, 2, False, _data(SHUTTING_DOWN_2, ORDERS_0_TO_3, ORDERS_1_TO_3, ORDERS_2_WITHOUT_2, SOLO_0_LEADERLESS)),
    (35, 2, False, _data(FENCE_2)),
    (36, 2, False, _data(NO_OP)),
]
LOG_END_OFFSET = 37
SNAPSHOT_END_OFFSET, SNAPSHOT_EPOCH = 22, 1
QUORUM_EPOCH = 2


def batch_timestamp(base_offset: int) -> int:
    """Batches half a second apart (Kafka's NoOp interval)."""
    return BASE_TIMESTAMP_MS + 500 * base_offset


SNAPSHOT: list[Batch] = [  # Kafka's snapshot order: features, the cluster (brokers, controllers), topics
    (0, SNAPSHOT_EPOCH, True, [(SNAPSHOT_HEADER_KEY, snapshot_header(batch_timestamp(21)))]),
    (
        1,
        SNAPSHOT_EPOCH,
        False,
        _data(
            FEATURE_MV_21,
            ZK_MIGRATION_NONE,
            SNAPSHOT_BROKER_1,
            SNAPSHOT_BROKER_2,
            SNAPSHOT_BROKER_3,
            REGISTER_CONTROLLER,
            TOPIC_ORDERS,
            ORDERS_0,
            SNAPSHOT_ORDERS_1,
            ORDERS_2,
            TOPIC_SOLO,
            SOLO_0,
        ),
    ),
    (13, SNAPSHOT_EPOCH, True, [(SNAPSHOT_FOOTER_KEY, SNAPSHOT_FOOTER)]),
]
BOOTSTRAP: list[Batch] = [  # bootstrap.checkpoint, as `kafka-storage format` writes it (epoch 0, no log time)
    (0, 0, True, [(SNAPSHOT_HEADER_KEY, snapshot_header(0))]),
    (1, 0, False, _data(FEATURE_MV_21)),
    (2, 0, True, [(SNAPSHOT_FOOTER_KEY, SNAPSHOT_FOOTER)]),
]

# ---------------------------------------------------------------------------- the cluster at the end of the log
#: broker id -> (epoch, incarnation, fenced, in controlled shutdown)
EXPECTED_BROKERS = {
    1: (6, str(uuid.UUID(B1)), True, True),
    2: (7, str(uuid.UUID(B2)), True, True),
    3: (8, str(uuid.UUID(B3)), False, False),
}
EXPECTED_TOPICS = {"orders": str(uuid.UUID(ORDERS)), "solo": str(uuid.UUID(SOLO))}
#: (topic, partition) -> (replicas, isr, leader, leader epoch, partition epoch)
EXPECTED_PARTITIONS = {
    ("orders", 0): ((1, 2, 3), (3,), 3, 2, 2),
    ("orders", 1): ((2, 3, 1), (3,), 3, 1, 4),
    ("orders", 2): ((3, 1, 2), (3,), 3, 0, 2),
    ("solo", 0): ((2,), (2,), -1, 1, 1),
}


# ---------------------------------------------------------------------------- record batch v2
def varint(value: int) -> bytes:
    """A zigzag varint (Kafka's ByteUtils.writeVarint)."""
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag & ~0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def record(offset_delta: int, key: bytes | None, value: bytes) -> bytes:
    """A record of a v2 batch: attributes, timestampDelta 0, offsetDelta, key, value, no headers;
    preceded by its length."""
    body = (
        b"\x00"  # attributes
        + varint(0)  # timestampDelta
        + varint(offset_delta)
        + (varint(-1) if key is None else varint(len(key)) + key)
        + varint(len(value))
        + value
        + varint(0)  # headers
    )
    return varint(len(body)) + body


def batch(
    base_offset: int, epoch: int, control: bool, records: list[tuple[bytes | None, bytes]], timestamp: int
) -> bytes:
    """A RecordBatch v2 (magic 2, uncompressed, CreateTime, no producer): the CRC-32C covers attributes..end."""
    attributes = 0x20 if control else 0  # bit 5: control batch
    body = b"".join(record(delta, key, value) for delta, (key, value) in enumerate(records))
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            attributes,
            len(records) - 1,  # lastOffsetDelta
            timestamp,  # baseTimestamp
            timestamp,  # maxTimestamp
            -1,  # producerId
            -1,  # producerEpoch
            -1,  # baseSequence
            len(records),
        )
        + body
    )
    after_length = struct.pack(">ibI", epoch, 2, crc32c(after_crc)) + after_crc  # partitionLeaderEpoch, magic, crc
    return struct.pack(">qi", base_offset, len(after_length)) + after_length


def encode(batches: list[Batch], timestamp: int | None = None) -> bytes:
    """The batches as file bytes; each stamped `batch_timestamp(base offset)` unless `timestamp` is given."""
    return b"".join(
        batch(
            base,
            epoch,
            control,
            [(None if key is None else bytes.fromhex(key), bytes.fromhex(value)) for key, value in records],
            batch_timestamp(base) if timestamp is None else timestamp,
        )
        for base, epoch, control, records in batches
    )


# ---------------------------------------------------------------------------- the data dir
def base64_uuid(hex_id: str) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(bytes.fromhex(hex_id)).decode().rstrip("=")


META_PROPERTIES = f"""#
#Thu Jan 01 10:00:00 UTC 2026
cluster.id={CLUSTER_ID}
directory.id={base64_uuid(D1)}
node.id={NODE_ID}
version=1
"""
QUORUM_STATE = (  # QuorumStateData v0 as Kafka 3.9 writes it for a static quorum (no trailing newline)
    f'{{"clusterId":"","leaderId":{NODE_ID},"leaderEpoch":{QUORUM_EPOCH},"votedId":-1,"appliedOffset":0,'
    f'"currentVoters":[{{"voterId":{NODE_ID}}}],"data_version":0}}'
)
LEADER_EPOCH_CHECKPOINT = "0\n2\n1 0\n2 23\n"  # version 0, two entries: (epoch, start offset)
PARTITION_METADATA = "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n"  # __cluster_metadata's fixed topic id


def write_kafka_dir(data_dir: Path) -> Path:
    """Write the data dir at `data_dir` (created); returns it."""
    partition = data_dir / "__cluster_metadata-0"
    partition.mkdir(parents=True)
    (data_dir / "meta.properties").write_text(META_PROPERTIES)
    (data_dir / "bootstrap.checkpoint").write_bytes(encode(BOOTSTRAP, BASE_TIMESTAMP_MS - 60_000))
    (partition / f"{0:020d}.log").write_bytes(encode(LOG))
    snapshot = partition / f"{SNAPSHOT_END_OFFSET:020d}-{SNAPSHOT_EPOCH:010d}.checkpoint"
    snapshot.write_bytes(encode(SNAPSHOT, batch_timestamp(SNAPSHOT_END_OFFSET) + 100))
    (partition / "quorum-state").write_text(QUORUM_STATE)
    (partition / "leader-epoch-checkpoint").write_text(LEADER_EPOCH_CHECKPOINT)
    (partition / "partition.metadata").write_text(PARTITION_METADATA)
    return data_dir
