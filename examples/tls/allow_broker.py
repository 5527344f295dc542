"""As a super user, let the brokers' principal in: `python examples/tls/allow_broker.py PORT DIR`
(DIR: what mint.py wrote). One CreateAcls v3 over TLS with the admin's certificate, encoded and
decoded by kio: User:broker may CLUSTER_ACTION on the cluster (every broker API), from any host."""

from __future__ import annotations

import io
import socket
import ssl
import struct
import sys
from pathlib import Path

from kio.schema.create_acls.v3 import request as create_acls
from kio.schema.create_acls.v3.response import CreateAclsResponse
from kio.schema.request_header.v2.header import RequestHeader
from kio.serial import entity_reader, entity_writer

CLUSTER, LITERAL, CLUSTER_ACTION, ALLOW = 4, 3, 9, 3  # Kafka's codes (protocol/acl_codes.py)


def read_exactly(sock: ssl.SSLSocket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("the controller closed the connection (is this certificate from its CA?)")
        data += chunk
    return data


def exchange(sock: ssl.SSLSocket, request: create_acls.CreateAclsRequest) -> CreateAclsResponse:
    header = RequestHeader(request_api_key=30, request_api_version=3, correlation_id=1, client_id="allow_broker")
    buffer = io.BytesIO()
    entity_writer(RequestHeader)(buffer, header)
    entity_writer(create_acls.CreateAclsRequest)(buffer, request)
    sock.sendall(struct.pack(">i", len(buffer.getvalue())) + buffer.getvalue())
    size = struct.unpack(">i", read_exactly(sock, 4))[0]
    payload = read_exactly(sock, size)
    _, offset = entity_reader(CreateAclsResponse.__header_schema__)(payload, 0)
    response, _ = entity_reader(CreateAclsResponse)(payload, offset)
    return response


if __name__ == "__main__":
    port, directory = int(sys.argv[1]), Path(sys.argv[2])
    context = ssl.create_default_context(cafile=directory / "ca.pem")
    context.load_cert_chain(directory / "admin.pem", directory / "admin.key")
    acl = create_acls.AclCreation(
        resource_type=CLUSTER, resource_name="kafka-cluster", resource_pattern_type=LITERAL,
        principal="User:broker", host="*", operation=CLUSTER_ACTION, permission_type=ALLOW,
    )  # fmt: skip
    with context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1") as sock:
        print(exchange(sock, create_acls.CreateAclsRequest(creations=(acl,))))
