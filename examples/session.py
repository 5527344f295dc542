"""A short session with a running fencer controller: register a broker, unfence it, create a
topic, shrink an ISR, then try the same change again with the old partition epoch (fenced).

Usage: python examples/session.py [PORT]   (the daemon's --listen port, default 9093)
"""

from __future__ import annotations

import socket
import struct
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.error_codes import error_name
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
)
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.messages.broker_registration import (
    BrokerRegistrationRequest,
    BrokerRegistrationRequestListener,
)
from protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsRequestCreatableTopic
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.registry import decode_response, encode_request
from protocol.spec import Data


def call(sock: socket.socket, body: Data, version: int) -> Data:
    sock.sendall(encode_request(body, version, correlation_id=1))
    size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
    _, response = decode_response(sock.recv(size, socket.MSG_WAITALL), body.API.key, version)
    return response


def main(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        cluster_id = call(sock, DescribeClusterRequest(), 1).cluster_id  # type: ignore[attr-defined]
        print(f"cluster id: {cluster_id}")
        epochs = {}
        for broker in (1, 2):
            listener = BrokerRegistrationRequestListener(name="PLAINTEXT", host="127.0.0.1", port=9100 + broker)
            registration = BrokerRegistrationRequest(
                broker_id=broker, cluster_id=cluster_id, incarnation_id=uuid.uuid4(), listeners=(listener,)
            )
            epochs[broker] = call(sock, registration, 3).broker_epoch  # type: ignore[attr-defined]
            heartbeat = BrokerHeartbeatRequest(
                broker_id=broker, broker_epoch=epochs[broker], current_metadata_offset=1 << 40
            )
            fenced = call(sock, heartbeat, 1).is_fenced  # type: ignore[attr-defined]
            print(f"broker {broker}: epoch {epochs[broker]}, fenced={fenced}")
        topic = CreateTopicsRequestCreatableTopic(name="orders", num_partitions=1, replication_factor=2)
        created = call(sock, CreateTopicsRequest(topics=(topic,)), 7).topics[0]  # type: ignore[attr-defined]
        print(f"created topic orders: {error_name(created.error_code)}, id {created.topic_id}")
        leader = 1
        for attempt in ("shrink the ISR to the leader", "replay the same request (stale partition epoch)"):
            data = AlterPartitionRequestPartitionData(
                partition_index=0, leader_epoch=0, new_isr=(leader,), partition_epoch=0
            )
            for candidate in (1, 2):  # the first try tells us who leads: the other one is answered INVALID_REQUEST
                request = AlterPartitionRequest(
                    broker_id=candidate,
                    broker_epoch=epochs[candidate],
                    topics=(AlterPartitionRequestTopicData(topic_id=created.topic_id, partitions=(data,)),),
                )
                result = call(sock, request, 2).topics[0].partitions[0]  # type: ignore[attr-defined]
                if result.error_code != 42:
                    break
                leader = 3 - candidate
                data = AlterPartitionRequestPartitionData(
                    partition_index=0, leader_epoch=0, new_isr=(leader,), partition_epoch=0
                )
            outcome = error_name(result.error_code)
            print(f"{attempt}: {outcome}, isr={list(result.isr)}, partition epoch {result.partition_epoch}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9093)
