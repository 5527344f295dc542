"""A fleet run over TLS against the real daemon, before the daemon's own TLS listener: a
TLS front (real TLS, requiring a client certificate from the run's CA, certificates minted by
trustme) carries the fleet's connections to a plain daemon. Every connection the fleet opened
presented its certificate and checked the front's; the brokers registered their listeners as SSL,
which the daemon's control channel, given no TLS context, logs as not attempted, once per broker
incarnation, instead of dialling them."""

from __future__ import annotations

import re
import ssl
from pathlib import Path

import trio

from broker_sim.shell.fleet import FleetConfig, run_fleet
from broker_sim.shell.tls import FleetTls
from broker_sim.stats import FleetStats
from tests.e2e.daemon_process import DaemonProcess
from tests.pki import Pki

NOT_CONNECTING = re.compile(
    r"broker (\d+) \(epoch (\d+)\) registered its listener 127\.0\.0\.1:\d+ as SSL \(the channel has no TLS context\)"
)


class TlsFront:
    """TLS-only, a client certificate from the CA required; each accepted connection's peer (its
    certificate's common name) noted, and its bytes pumped to and from `upstream` in plain TCP."""

    def __init__(self, context: ssl.SSLContext, upstream: int) -> None:
        self.context = context
        self.upstream = upstream
        self.peers: list[str] = []
        self.refused = 0

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port: int = listeners[0].socket.getsockname()[1]
        wrapped = [trio.SSLListener(listener, self.context) for listener in listeners]
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._carry, wrapped)
            task_status.started(port)

    async def _carry(self, client: trio.SSLStream[trio.SocketStream]) -> None:
        try:
            await client.do_handshake()
        except trio.BrokenResourceError:
            self.refused += 1
            return
        subject = dict(item[0] for item in client.getpeercert()["subject"])
        self.peers.append(str(subject["commonName"]))
        upstream = await trio.open_tcp_stream("127.0.0.1", self.upstream)
        async with client, upstream, trio.open_nursery() as nursery:
            nursery.start_soon(_pump, client, upstream, nursery.cancel_scope)
            nursery.start_soon(_pump, upstream, client, nursery.cancel_scope)


async def _pump(source: trio.abc.Stream, sink: trio.abc.Stream, scope: trio.CancelScope) -> None:
    try:
        while data := await source.receive_some(65536):
            await sink.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    scope.cancel()


async def test_the_fleets_connections_are_tls_and_its_brokers_register_ssl_listeners(tmp_path: Path) -> None:
    pki = Pki(tmp_path / "pki")
    fleet = pki.issue("fleet", "127.0.0.1")
    front_context = pki.server_context(pki.issue("controller", "127.0.0.1"))
    daemon = await trio.to_thread.run_sync(
        lambda: DaemonProcess(tmp_path / "data", "--session-timeout-ms", "3000").start()
    )
    try:
        front = TlsFront(front_context, daemon.port)
        async with trio.open_nursery() as nursery:
            port = await nursery.start(front.serve)
            config = FleetConfig(
                controller_port=port,
                brokers=3,
                topics=1,
                partitions=3,
                replication_factor=3,
                duration_s=6.0,
                heartbeat_ms=500,
                session_timeout_ms=3000,
                journal_path=tmp_path / "journal.jsonl",
                tls=FleetTls(fleet.cert, fleet.key, pki.ca),
            )
            stats = FleetStats()
            outcome = await run_fleet(config, stats)
            nursery.cancel_scope.cancel()
    finally:
        code = await trio.to_thread.run_sync(daemon.stop)
    assert code == 0, daemon.stderr()
    assert outcome.finished and outcome.unreachable is None
    # the reach probe, the admin, each broker's lifecycle connection (its data connection has nothing to
    # say: no LeaderAndIsr reached it): all through the front, all with the fleet's certificate
    assert len(front.peers) >= 1 + 1 + 3 and set(front.peers) == {"fleet"}
    assert front.refused == 0
    refusals = {(int(broker), int(epoch)) for broker, epoch in NOT_CONNECTING.findall(daemon.stderr())}
    assert {broker for broker, _ in refusals} == {0, 1, 2}, daemon.stderr()[-3000:]
    lines = NOT_CONNECTING.findall(daemon.stderr())
    assert len(lines) == len(refusals), "logged once per broker incarnation"
