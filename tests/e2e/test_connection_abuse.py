"""Connections that abuse the daemon's memory, its idle timer or its log, against the real daemon.

Big frames sent slowly hold the memory budget (`--max-queued-bytes`): another big frame waits
unread until one of them goes, while small requests keep flowing; the large frame (decoded off
the event loop) is then answered in full. A frame trickled one byte at a time is closed after
the idle timeout while a steady client is not. A thousand refused frames are all counted, but
logged only a handful of times.
"""

from __future__ import annotations

import select
import socket
import struct
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from . import kio_messages as m
from .daemon_process import DaemonProcess, free_port
from .framed_socket import FramedSocket
from .kio_client import KioClient

UNKNOWN_TOPIC_ID = 100


def closed_now(sock: socket.socket) -> bool:
    """True if the daemon has closed `sock` (without waiting)."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except ConnectionResetError:
        return True


def alter_partition(broker_epoch: int, partitions: int) -> Any:
    """An AlterPartition v2 for a topic id nobody knows, naming `partitions` partitions."""
    mod = m.module(56, 2)
    parts = tuple(
        m.build(
            mod.PartitionData,
            partition_index=i,
            leader_epoch=0,
            new_isr=(1,),
            leader_recovery_state=0,
            partition_epoch=0,
        )
        for i in range(partitions)
    )
    topic = m.build(mod.TopicData, topic_id=uuid.UUID(int=77), partitions=parts)
    return m.build(m.request_class(56, 2), broker_id=1, broker_epoch=broker_epoch, topics=(topic,))


def register_broker(client: KioClient) -> int:
    cluster = client.request(m.describe_cluster(1)).cluster_id
    epoch: int = client.request(m.broker_registration(3, 1, cluster, uuid.UUID(int=1), 9999)).broker_epoch
    client.request(m.broker_heartbeat(1, 1, epoch))
    return epoch


def test_big_frames_wait_for_memory_while_small_requests_flow(tmp_path: Path) -> None:
    daemon = DaemonProcess(
        tmp_path / "data", "--max-frame-bytes", str(2 << 20), "--max-queued-bytes", str(4 << 20)
    ).start()
    try:
        with KioClient(daemon.port) as bystander, KioClient(daemon.port) as client:
            epoch = register_broker(bystander)
            waiting = alter_partition(epoch, 5_000)  # about 95 KB: more than one read
            correlation, data = client.encode(waiting)
            holders = [FramedSocket(daemon.port) for _ in range(2)]
            for holder in holders:  # two largest frames begun: they take the whole budget
                holder.sock.sendall(struct.pack(">i", 2 << 20) + bytes(100))
            time.sleep(0.2)
            sender = threading.Thread(target=client.sock.sendall, args=(data,))
            sender.start()
            assert bystander.request(m.api_versions(3)).error_code == 0, "a small request must still flow"
            client.sock.settimeout(2.0)
            try:
                early = client.sock.recv(1, socket.MSG_PEEK)
            except TimeoutError:
                early = None
            assert early is None, "a frame was read and answered while the budget was taken"
            holders[0].close()  # its memory is released: the waiting frame is read on
            sender.join(30)
            client.sock.settimeout(30)
            assert_unknown_topic(client.receive(waiting, correlation), 5_000)
            holders[1].close()
            large = alter_partition(epoch, 60_000)  # about 1.1 MB: decoded in a worker thread
            assert_unknown_topic(client.request(large), 60_000)
    finally:
        assert daemon.stop() == 0, daemon.stderr()


def assert_unknown_topic(response: Any, partitions: int) -> None:
    """Every partition named, in order, answered UNKNOWN_TOPIC_ID."""
    assert response.error_code == 0
    (topic,) = response.topics
    assert [p.partition_index for p in topic.partitions] == list(range(partitions))
    assert {p.error_code for p in topic.partitions} == {UNKNOWN_TOPIC_ID}


def test_a_trickled_frame_is_closed_after_the_idle_timeout_and_a_steady_client_is_not(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path / "data", "--idle-timeout-ms", "1000").start()
    try:
        with KioClient(daemon.port) as steady, FramedSocket(daemon.port) as trickler:
            frame = struct.pack(">i", 10_000) + bytes(10_000)  # never finished at this pace
            sent = 0
            closed = False
            deadline = time.monotonic() + 15
            while not closed and time.monotonic() < deadline:
                try:
                    trickler.sock.send(frame[sent : sent + 1])
                    sent += 1
                except OSError:  # reset by the daemon
                    closed = True
                assert steady.request(m.api_versions(3)).error_code == 0
                time.sleep(0.05)
                closed = closed or closed_now(trickler.sock)
            assert closed, f"the trickling connection is still open after {sent} bytes"
            assert sent < len(frame)
            assert steady.request(m.api_versions(3)).error_code == 0, "the steady client was closed too"
    finally:
        assert daemon.stop() == 0, daemon.stderr()
    assert "closing idle connection" in daemon.stderr()


def test_a_thousand_refused_frames_are_all_counted_and_logged_a_handful_of_times(tmp_path: Path) -> None:
    metrics_port = free_port()
    daemon = DaemonProcess(tmp_path / "data", "--metrics-listen", f"127.0.0.1:{metrics_port}").start()
    unknown_api = struct.pack(">ihhih", 10, 999, 0, 7, -1)
    try:
        for _ in range(1000):
            with FramedSocket(daemon.port) as offender:
                offender.sock.sendall(unknown_api)
                assert offender.sock.recv(1) == b""
        url = f"http://127.0.0.1:{metrics_port}/metrics"
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        assert 'fencer_invalid_frames_total{reason="unknown_api"} 1000.0' in text
    finally:
        assert daemon.stop() == 0, daemon.stderr()
    refusals = [line for line in daemon.stderr().splitlines() if "closing connection from" in line]
    assert 1 <= len(refusals) <= 5, f"{len(refusals)} log lines for 1,000 refused frames"
