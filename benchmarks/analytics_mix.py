"""A generated capture in the fleet's mix, for benchmarks/analytics.py (real frames, seeded).

`write_capture(directory, count, seed)` writes `count` exchanges as the daemon writes parts
(`controller.server.capture.write_part`, 50,000 rows each). Each kind of exchange has 64 variants (random
ids, epochs, partitions, ISRs, a few stale-epoch answers); rows pick a kind by the mix's weights
and a variant at random, get their own correlation id (patched into both frames), a time (50,000
exchanges/s) and a latency (log-normal around 1 ms). The same count and seed give the same
files in any process (the connection id is a crc32 of the peer, not `hash()`, which
PYTHONHASHSEED varies per process).
"""

from __future__ import annotations

import json
import random
import struct
import uuid
import zlib
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from controller.server.capture import write_part
from protocol.capture import INBOUND, OUTBOUND, capture_schema, part_name
from protocol.error_codes import ErrorCode
from protocol.messages import (
    alter_partition as ap,
)
from protocol.messages import (
    alter_replica_state as ars,
)
from protocol.messages import (
    api_versions as av,
)
from protocol.messages import (
    broker_heartbeat as hb,
)
from protocol.messages import (
    broker_registration as br,
)
from protocol.messages import (
    controlled_shutdown as cs,
)
from protocol.messages import (
    create_topics as ct,
)
from protocol.messages import (
    delete_topics as dt,
)
from protocol.messages import (
    describe_cluster as dc,
)
from protocol.messages import (
    leader_and_isr as lai,
)
from protocol.messages import (
    stop_replica as sr,
)
from protocol.registry import encode_request, encode_response
from protocol.spec import Data

PART_ROWS = 50_000
VARIANTS = 64
BROKERS = 20
TOPICS = [(f"topic-{index}", uuid.UUID(int=index + 1)) for index in range(50)]
START_NS = 1_795_428_000_000_000_000  # 2026-11-23 10:00 UTC
SPACING_NS = 20_000  # 50,000 exchanges/s

Frames = tuple[int, int, bytes, bytes, str, str]  # api key, version, request, response, direction, peer


def _frames(
    request: Data, version: int, response: Data, direction: str = INBOUND, peer: str = "10.0.0.1:40000"
) -> Frames:
    return (
        request.API.key, version, encode_request(request, version, 0)[4:], encode_response(response, version, 0)[4:],
        direction, peer,
    )  # fmt: skip


def _stale(rng: random.Random, code: ErrorCode, share: float) -> int:
    return int(code) if rng.random() < share else 0


def heartbeat(rng: random.Random) -> Frames:
    broker = rng.randrange(BROKERS)
    request = hb.BrokerHeartbeatRequest(
        broker_id=broker, broker_epoch=rng.randrange(1, 10**6), current_metadata_offset=rng.randrange(10**7)
    )
    response = hb.BrokerHeartbeatResponse(
        error_code=_stale(rng, ErrorCode.STALE_BROKER_EPOCH, 0.02), is_caught_up=True, is_fenced=False
    )
    return _frames(request, 1, response)


def alter_partition(rng: random.Random) -> Frames:
    broker, error = rng.randrange(BROKERS), _stale(rng, ErrorCode.INVALID_UPDATE_VERSION, 0.05)
    _, topic_id = rng.choice(TOPICS)
    asked, answers = [], []
    for index in rng.sample(range(64), rng.randint(1, 4)):
        isr = tuple(sorted(rng.sample(range(BROKERS), rng.randint(1, 3))))
        members = tuple(
            ap.AlterPartitionRequestBrokerState(broker_id=b, broker_epoch=rng.randrange(10**6)) for b in isr
        )
        epoch = rng.randrange(1000)
        asked.append(
            ap.AlterPartitionRequestPartitionData(
                partition_index=index, leader_epoch=epoch, new_isr_with_epochs=members, partition_epoch=epoch
            )
        )
        answers.append(
            ap.AlterPartitionResponsePartitionData(
                partition_index=index,
                error_code=error,
                leader_id=broker,
                leader_epoch=epoch,
                isr=isr,
                partition_epoch=epoch + 1,
            )
        )
    request = ap.AlterPartitionRequest(
        broker_id=broker,
        broker_epoch=rng.randrange(10**6),
        topics=(ap.AlterPartitionRequestTopicData(topic_id=topic_id, partitions=tuple(asked)),),
    )
    response = ap.AlterPartitionResponse(
        topics=(ap.AlterPartitionResponseTopicData(topic_id=topic_id, partitions=tuple(answers)),)
    )
    return _frames(request, 3, response)


def leader_and_isr(rng: random.Random) -> Frames:
    broker = rng.randrange(BROKERS)
    name, topic_id = rng.choice(TOPICS)
    states = []
    for index in rng.sample(range(64), rng.randint(1, 8)):
        replicas = tuple(rng.sample(range(BROKERS), 3))
        states.append(
            lai.LeaderAndIsrRequestPartitionState(
                partition_index=index,
                controller_epoch=1,
                leader=replicas[0],
                leader_epoch=rng.randrange(1000),
                isr=replicas,
                partition_epoch=rng.randrange(1000),
                replicas=replicas,
            )
        )
    topic = lai.LeaderAndIsrRequestTopicState(topic_name=name, topic_id=topic_id, partition_states=tuple(states))
    request = lai.LeaderAndIsrRequest(
        controller_id=1,
        controller_epoch=1,
        broker_epoch=rng.randrange(10**6),
        type_=1,
        topic_states=(topic,),
        live_leaders=(),
    )
    errors = tuple(
        lai.LeaderAndIsrResponsePartitionError(
            partition_index=s.partition_index, error_code=_stale(rng, ErrorCode.FENCED_LEADER_EPOCH, 0.02)
        )
        for s in states
    )
    response = lai.LeaderAndIsrResponse(
        topics=(lai.LeaderAndIsrResponseTopicError(topic_id=topic_id, partition_errors=errors),)
    )
    return _frames(request, 7, response, OUTBOUND, f"10.0.1.{broker}:9092")


def stop_replica(rng: random.Random) -> Frames:
    broker = rng.randrange(BROKERS)
    name, _ = rng.choice(TOPICS)
    states = tuple(
        sr.StopReplicaRequestPartitionState(
            partition_index=i, leader_epoch=rng.randrange(1000), delete_partition=rng.random() < 0.5
        )
        for i in rng.sample(range(64), rng.randint(1, 4))
    )
    request = sr.StopReplicaRequest(
        controller_id=1,
        controller_epoch=1,
        broker_epoch=rng.randrange(10**6),
        topic_states=(sr.StopReplicaRequestTopicState(topic_name=name, partition_states=states),),
    )
    errors = tuple(
        sr.StopReplicaResponsePartitionError(
            topic_name=name,
            partition_index=s.partition_index,
            error_code=_stale(rng, ErrorCode.FENCED_LEADER_EPOCH, 0.05),
        )
        for s in states
    )
    return _frames(request, 4, sr.StopReplicaResponse(partition_errors=errors), OUTBOUND, f"10.0.1.{broker}:9092")


def alter_replica_state(rng: random.Random) -> Frames:
    _, topic_id = rng.choice(TOPICS)
    partitions = tuple(rng.sample(range(64), rng.randint(1, 4)))
    request = ars.AlterReplicaStateRequest(
        broker_id=rng.randrange(BROKERS),
        broker_epoch=rng.randrange(10**6),
        new_state=rng.choice((ars.OFFLINE, ars.ONLINE)),
        reason="log dir failed",
        topics=(ars.AlterReplicaStateRequestTopicReplicas(topic_id=topic_id, partitions=partitions),),
    )
    results = tuple(ars.AlterReplicaStateResponsePartitionResult(partition_index=p) for p in partitions)
    response = ars.AlterReplicaStateResponse(
        topics=(ars.AlterReplicaStateResponseTopicResult(topic_id=topic_id, partitions=results),)
    )
    return _frames(request, 1, response)


def controlled_shutdown(rng: random.Random) -> Frames:
    left = tuple(
        cs.ControlledShutdownResponseRemainingPartition(topic_name=rng.choice(TOPICS)[0], partition_index=i)
        for i in range(rng.choice((0, 0, 1, 3)))
    )
    request = cs.ControlledShutdownRequest(broker_id=rng.randrange(BROKERS), broker_epoch=rng.randrange(10**6))
    return _frames(request, 3, cs.ControlledShutdownResponse(remaining_partitions=left))


def registration(rng: random.Random) -> Frames:
    broker = rng.randrange(BROKERS)
    listener = br.BrokerRegistrationRequestListener(name="PLAINTEXT", host=f"10.0.1.{broker}", port=9092)
    request = br.BrokerRegistrationRequest(
        broker_id=broker,
        cluster_id="bench-cluster-000000000",
        incarnation_id=uuid.UUID(int=rng.getrandbits(128)),
        listeners=(listener,),
    )
    return _frames(request, 3, br.BrokerRegistrationResponse(broker_epoch=rng.randrange(10**6)))


def describe_cluster(rng: random.Random) -> Frames:
    brokers = tuple(
        dc.DescribeClusterResponseDescribeClusterBroker(broker_id=b, host=f"10.0.1.{b}", port=9092)
        for b in range(BROKERS)
    )
    return _frames(
        dc.DescribeClusterRequest(),
        1,
        dc.DescribeClusterResponse(cluster_id="bench-cluster-000000000", controller_id=1, brokers=brokers),
    )


def api_versions(rng: random.Random) -> Frames:
    keys = tuple(
        av.ApiVersionsResponseApiVersion(api_key=k, min_version=0, max_version=3)
        for k in (7, 18, 19, 20, 43, 56, 60, 62, 63)
    )
    return _frames(
        av.ApiVersionsRequest(client_software_name="fleet", client_software_version="1"),
        3,
        av.ApiVersionsResponse(api_keys=keys),
    )


def create_topics(rng: random.Random) -> Frames:
    name, topic_id = rng.choice(TOPICS)
    request = ct.CreateTopicsRequest(
        topics=(ct.CreateTopicsRequestCreatableTopic(name=name, num_partitions=64, replication_factor=3),)
    )
    result = ct.CreateTopicsResponseCreatableTopicResult(
        name=name,
        topic_id=topic_id,
        error_code=_stale(rng, ErrorCode.TOPIC_ALREADY_EXISTS, 0.3),
        num_partitions=64,
        replication_factor=3,
    )
    return _frames(request, 7, ct.CreateTopicsResponse(topics=(result,)))


def delete_topics(rng: random.Random) -> Frames:
    name, _ = rng.choice(TOPICS)
    request = dt.DeleteTopicsRequest(topic_names=(name,))
    return _frames(
        request, 5, dt.DeleteTopicsResponse(responses=(dt.DeleteTopicsResponseDeletableTopicResult(name=name),))
    )


MIX: list[tuple[Callable[[random.Random], Frames], int]] = [
    (heartbeat, 55), (alter_partition, 18), (leader_and_isr, 10), (stop_replica, 3), (alter_replica_state, 3),
    (controlled_shutdown, 2), (registration, 2), (describe_cluster, 3), (api_versions, 2), (create_topics, 1),
    (delete_topics, 1),
]  # fmt: skip


def _with_correlation(frames: Frames, correlation_id: int) -> tuple[bytes, bytes]:
    """The frames with their correlation id set (request: bytes 4-7; response: bytes 0-3)."""
    request, response = frames[2], frames[3]
    packed = struct.pack(">i", correlation_id)
    return request[:4] + packed + request[8:], packed + response[4:]


def write_capture(directory: Path, count: int, seed: int) -> bool:
    """Write the capture unless `directory` already holds this one; True if it was written."""
    stamp = directory / ".bench-capture.json"
    wanted = {"count": count, "seed": seed, "version": 2}  # 2: connection ids from crc32 (1: from hash(), per process)
    if stamp.exists() and json.loads(stamp.read_text()) == wanted:
        return False
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("*.parquet"):
        old.unlink()
    rng = random.Random(seed)
    variants = [[make(rng) for _ in range(VARIANTS)] for make, _ in MIX]
    weights = [weight for _, weight in MIX]
    for first in range(0, count, PART_ROWS):
        rows = min(PART_ROWS, count - first)
        kinds = rng.choices(range(len(MIX)), weights, k=rows)
        chosen = [variants[kind][rng.randrange(VARIANTS)] for kind in kinds]
        _write_part(directory, first, chosen, rng)
    stamp.write_text(json.dumps(wanted))
    return True


def _write_part(directory: Path, first: int, chosen: list[Frames], rng: random.Random) -> None:
    times = [START_NS + (first + offset) * SPACING_NS for offset in range(len(chosen))]
    latencies = [int(rng.lognormvariate(0, 0.6) * 1_000_000) for _ in chosen]
    correlations = [(first + offset) % 2**31 for offset in range(len(chosen))]
    frames = [_with_correlation(frame, correlation) for frame, correlation in zip(chosen, correlations, strict=True)]
    columns = [
        times,
        [t + latency for t, latency in zip(times, latencies, strict=True)],
        [frame[4] for frame in chosen],
        [zlib.crc32(frame[5].encode()) % 1000 for frame in chosen],  # not hash(): str hashes change per process
        [frame[5] for frame in chosen],
        [frame[0] for frame in chosen],
        [frame[1] for frame in chosen],
        correlations,
        [request for request, _ in frames],
        [response for _, response in frames],
    ]
    arrays = [pa.array(column, type=field.type) for column, field in zip(columns, capture_schema(), strict=True)]
    table = pa.Table.from_arrays(arrays, schema=capture_schema())
    write_part(table, directory, part_name("capture", times[0], first // PART_ROWS))
