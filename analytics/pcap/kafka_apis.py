"""The names of Kafka's APIs by key, for the counts of traffic that is not decoded.

Purpose: a capture of a broker port holds every API (Produce, Fetch, Metadata...), which the pcap
reader counts by key and version without decoding; the report names them. The table is static,
generated once from Kafka 3.9's message schemas (`*Request.json`: their `apiKey` and `name`, less
the "Request" suffix) and checked in, because the schemas are not shipped with fencer.

Rules:
- Keys whose schema the reference directory holds were generated from it; the others are Kafka
  3.9's `ApiKeys` enum, marked as such (the generator checked that both agree where both exist).
- 1000 is fencer's own AlterReplicaState; any other key is "api <key>", never an error.
"""

from __future__ import annotations

#: Kafka 3.9's APIs by key, plus fencer's AlterReplicaState (1000).
KAFKA_API_NAMES: dict[int, str] = {
    0: "Produce",  # not in the reference directory: Kafka 3.9's ApiKeys
    1: "Fetch",
    2: "ListOffsets",  # not in the reference directory: Kafka 3.9's ApiKeys
    3: "Metadata",
    4: "LeaderAndIsr",
    5: "StopReplica",
    6: "UpdateMetadata",
    7: "ControlledShutdown",
    8: "OffsetCommit",  # not in the reference directory: Kafka 3.9's ApiKeys
    9: "OffsetFetch",  # not in the reference directory: Kafka 3.9's ApiKeys
    10: "FindCoordinator",  # not in the reference directory: Kafka 3.9's ApiKeys
    11: "JoinGroup",  # not in the reference directory: Kafka 3.9's ApiKeys
    12: "Heartbeat",  # not in the reference directory: Kafka 3.9's ApiKeys
    13: "LeaveGroup",  # not in the reference directory: Kafka 3.9's ApiKeys
    14: "SyncGroup",  # not in the reference directory: Kafka 3.9's ApiKeys
    15: "DescribeGroups",  # not in the reference directory: Kafka 3.9's ApiKeys
    16: "ListGroups",  # not in the reference directory: Kafka 3.9's ApiKeys
    17: "SaslHandshake",
    18: "ApiVersions",
    19: "CreateTopics",
    20: "DeleteTopics",
    21: "DeleteRecords",  # not in the reference directory: Kafka 3.9's ApiKeys
    22: "InitProducerId",  # not in the reference directory: Kafka 3.9's ApiKeys
    23: "OffsetForLeaderEpoch",  # not in the reference directory: Kafka 3.9's ApiKeys
    24: "AddPartitionsToTxn",  # not in the reference directory: Kafka 3.9's ApiKeys
    25: "AddOffsetsToTxn",  # not in the reference directory: Kafka 3.9's ApiKeys
    26: "EndTxn",  # not in the reference directory: Kafka 3.9's ApiKeys
    27: "WriteTxnMarkers",  # not in the reference directory: Kafka 3.9's ApiKeys
    28: "TxnOffsetCommit",  # not in the reference directory: Kafka 3.9's ApiKeys
    29: "DescribeAcls",
    30: "CreateAcls",
    31: "DeleteAcls",
    32: "DescribeConfigs",  # not in the reference directory: Kafka 3.9's ApiKeys
    33: "AlterConfigs",  # not in the reference directory: Kafka 3.9's ApiKeys
    34: "AlterReplicaLogDirs",  # not in the reference directory: Kafka 3.9's ApiKeys
    35: "DescribeLogDirs",  # not in the reference directory: Kafka 3.9's ApiKeys
    36: "SaslAuthenticate",
    37: "CreatePartitions",  # not in the reference directory: Kafka 3.9's ApiKeys
    38: "CreateDelegationToken",  # not in the reference directory: Kafka 3.9's ApiKeys
    39: "RenewDelegationToken",  # not in the reference directory: Kafka 3.9's ApiKeys
    40: "ExpireDelegationToken",  # not in the reference directory: Kafka 3.9's ApiKeys
    41: "DescribeDelegationToken",  # not in the reference directory: Kafka 3.9's ApiKeys
    42: "DeleteGroups",  # not in the reference directory: Kafka 3.9's ApiKeys
    43: "ElectLeaders",
    44: "IncrementalAlterConfigs",  # not in the reference directory: Kafka 3.9's ApiKeys
    45: "AlterPartitionReassignments",  # not in the reference directory: Kafka 3.9's ApiKeys
    46: "ListPartitionReassignments",  # not in the reference directory: Kafka 3.9's ApiKeys
    47: "OffsetDelete",  # not in the reference directory: Kafka 3.9's ApiKeys
    48: "DescribeClientQuotas",  # not in the reference directory: Kafka 3.9's ApiKeys
    49: "AlterClientQuotas",  # not in the reference directory: Kafka 3.9's ApiKeys
    50: "DescribeUserScramCredentials",  # not in the reference directory: Kafka 3.9's ApiKeys
    51: "AlterUserScramCredentials",  # not in the reference directory: Kafka 3.9's ApiKeys
    52: "Vote",
    53: "BeginQuorumEpoch",
    54: "EndQuorumEpoch",
    55: "DescribeQuorum",
    56: "AlterPartition",
    57: "UpdateFeatures",  # not in the reference directory: Kafka 3.9's ApiKeys
    58: "Envelope",  # not in the reference directory: Kafka 3.9's ApiKeys
    59: "FetchSnapshot",
    60: "DescribeCluster",
    61: "DescribeProducers",  # not in the reference directory: Kafka 3.9's ApiKeys
    62: "BrokerRegistration",
    63: "BrokerHeartbeat",
    64: "UnregisterBroker",  # not in the reference directory: Kafka 3.9's ApiKeys
    65: "DescribeTransactions",  # not in the reference directory: Kafka 3.9's ApiKeys
    66: "ListTransactions",  # not in the reference directory: Kafka 3.9's ApiKeys
    67: "AllocateProducerIds",  # not in the reference directory: Kafka 3.9's ApiKeys
    68: "ConsumerGroupHeartbeat",  # not in the reference directory: Kafka 3.9's ApiKeys
    69: "ConsumerGroupDescribe",  # not in the reference directory: Kafka 3.9's ApiKeys
    70: "ControllerRegistration",
    71: "GetTelemetrySubscriptions",  # not in the reference directory: Kafka 3.9's ApiKeys
    72: "PushTelemetry",  # not in the reference directory: Kafka 3.9's ApiKeys
    73: "AssignReplicasToDirs",  # not in the reference directory: Kafka 3.9's ApiKeys
    74: "ListClientMetricsResources",  # not in the reference directory: Kafka 3.9's ApiKeys
    75: "DescribeTopicPartitions",  # not in the reference directory: Kafka 3.9's ApiKeys
    76: "ShareGroupHeartbeat",  # not in the reference directory: Kafka 3.9's ApiKeys
    77: "ShareGroupDescribe",  # not in the reference directory: Kafka 3.9's ApiKeys
    78: "ShareFetch",  # not in the reference directory: Kafka 3.9's ApiKeys
    79: "ShareAcknowledge",  # not in the reference directory: Kafka 3.9's ApiKeys
    80: "AddRaftVoter",
    81: "RemoveRaftVoter",
    82: "UpdateRaftVoter",
    83: "InitializeShareGroupState",  # not in the reference directory: Kafka 3.9's ApiKeys
    84: "ReadShareGroupState",  # not in the reference directory: Kafka 3.9's ApiKeys
    85: "WriteShareGroupState",  # not in the reference directory: Kafka 3.9's ApiKeys
    86: "DeleteShareGroupState",  # not in the reference directory: Kafka 3.9's ApiKeys
    87: "ReadShareGroupStateSummary",  # not in the reference directory: Kafka 3.9's ApiKeys
    1000: "AlterReplicaState",
}

#: The highest Kafka api key named above (fencer's 1000 aside): the resynchronisation's bound.
MAX_KAFKA_API_KEY = max(key for key in KAFKA_API_NAMES if key < 1000)


def kafka_api_name(api_key: int) -> str:
    """The API's name ("Produce", "AlterPartition"...), or "api <key>" for a key Kafka 3.9 does not have."""
    return KAFKA_API_NAMES.get(api_key, f"api {api_key}")
