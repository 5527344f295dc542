"""The control channel over TLS, against real TLS listeners on 127.0.0.1 with certificates
minted by trustme: an SSL listener reached over TLS with the controller's certificate, a broker's
certificate for another host refused and counted, a listener the channel cannot speak not attempted
(counted once per incarnation), PLAINTEXT as before; the client context's files checked."""

from __future__ import annotations

import logging
import ssl
from pathlib import Path

import pytest
import trio

from broker_sim.shell.listener import BrokerControlListener
from controller.control.channel import ControlChannel
from controller.control.orders import BrokerTarget
from controller.control.tls import Transport, client_context, transport_for
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.security_protocol import SecurityProtocol
from tests.pki import Pki

from .test_channel import CONTROLLER_ID, FAST, RecordingMetrics, control, lai, until

BROKER = 1


class Broker:
    """One broker's listener and what it registered: the channel's address book."""

    def __init__(self, listener: BrokerControlListener, port: int, protocol: int, epoch: int = 100) -> None:
        self.listener = listener
        self.port = port
        self.protocol = protocol
        self.epoch = epoch

    def address(self, broker_id: int) -> BrokerTarget | None:
        return BrokerTarget("127.0.0.1", self.port, self.epoch, self.protocol) if broker_id == BROKER else None


async def serve(nursery: trio.Nursery, protocol: int, tls: ssl.SSLContext | None = None) -> Broker:
    epochs = {BROKER: 100}
    listener = BrokerControlListener(BROKER, lambda: epochs[BROKER], tls=tls)
    port = await nursery.start(listener.serve)
    broker = Broker(listener, port, protocol)
    listener.broker_epoch = lambda: broker.epoch
    return broker


def channel_for(broker: Broker, tls: ssl.SSLContext | None, metrics: RecordingMetrics | None = None) -> ControlChannel:
    return ControlChannel(
        controller_id=CONTROLLER_ID,
        broker_address=broker.address,
        metrics=metrics,
        tls=tls,
        **FAST,  # type: ignore[arg-type]
    )


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki(tmp_path / "pki")


async def test_an_ssl_listener_gets_the_leader_and_isr_over_tls_with_the_controllers_certificate(
    pki: Pki, nursery: trio.Nursery
) -> None:
    controller = pki.issue("controller")
    broker = await serve(nursery, SecurityProtocol.SSL, pki.server_context(pki.issue("broker-1", "127.0.0.1")))
    channel = channel_for(broker, client_context(controller.cert, controller.key, pki.ca))
    await nursery.start(channel.run)
    channel.submit([lai(BROKER, epoch=100)])
    await until(lambda: channel.queue_depth(BROKER) == 0)
    assert [key for key, _, _ in control(broker.listener)] == [ApiKey.LEADER_AND_ISR]
    assert [answer.error_code for answer in channel.outcomes.recent_answers] == [ErrorCode.NONE, ErrorCode.NONE]
    assert channel.connection_failures == 0 and broker.listener.tls_failures == 0


async def test_a_controller_presenting_no_certificate_is_refused_by_a_listener_requiring_one(
    pki: Pki, nursery: trio.Nursery
) -> None:
    broker = await serve(nursery, SecurityProtocol.SSL, pki.server_context(pki.issue("broker-1", "127.0.0.1")))
    metrics = RecordingMetrics()
    channel = channel_for(broker, pki.client_context(None), metrics)
    await nursery.start(channel.run)
    channel.submit([lai(BROKER, epoch=100)])
    await until(lambda: channel.connection_failures >= 2 and broker.listener.tls_failures >= 2)
    assert broker.listener.received == []
    assert channel.queue_depth(BROKER) == 1, "the order waits, as for a broker that cannot be reached"
    assert metrics.failures[:2] == [BROKER, BROKER]


async def test_a_broker_certificate_for_another_host_is_refused_and_counted(
    pki: Pki, nursery: trio.Nursery, caplog: pytest.LogCaptureFixture
) -> None:
    controller = pki.issue("controller")
    elsewhere = pki.server_context(pki.issue("broker-1", "broker-1.example.com"))
    broker = await serve(nursery, SecurityProtocol.SSL, elsewhere)
    metrics = RecordingMetrics()
    channel = channel_for(broker, client_context(controller.cert, controller.key, pki.ca), metrics)
    with caplog.at_level(logging.WARNING, logger="fencer.channel"):
        await nursery.start(channel.run)
        channel.submit([lai(BROKER, epoch=100)])
        await until(lambda: channel.connection_failures >= 2)
    assert broker.listener.received == [] and channel.queue_depth(BROKER) == 1
    assert metrics.failures[:2] == [BROKER, BROKER]
    warnings = [r.message for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, "the first failure of a streak is the warning"
    assert "connection failed (TLS:" in warnings[0] and "mismatch" in warnings[0], warnings


@pytest.mark.parametrize(
    ("protocol", "with_context"),
    [
        (SecurityProtocol.SASL_SSL, True),
        (SecurityProtocol.SASL_PLAINTEXT, True),
        (SecurityProtocol.SSL, False),
        (7, True),
    ],
)
async def test_a_listener_the_channel_cannot_speak_is_not_attempted_and_counted_once_per_incarnation(
    pki: Pki, nursery: trio.Nursery, caplog: pytest.LogCaptureFixture, protocol: int, with_context: bool
) -> None:
    controller = pki.issue("controller")
    broker = await serve(nursery, protocol)  # a plain listener: whatever it says, it is never dialled
    metrics = RecordingMetrics()
    tls = client_context(controller.cert, controller.key, pki.ca) if with_context else None
    channel = channel_for(broker, tls, metrics)
    with caplog.at_level(logging.WARNING, logger="fencer.channel"):
        await nursery.start(channel.run)
        channel.submit([lai(BROKER, epoch=100)])
        await until(lambda: channel.unspeakable_listeners == 1)
        await trio.sleep(0.2)  # many backoffs (FAST: at most 20 ms each): still one count, one line
        assert broker.listener.connections == 0
        assert (channel.unspeakable_listeners, channel.connection_failures, metrics.failures) == (1, 1, [BROKER])
        assert channel.queue_depth(BROKER) == 1 and channel.is_running(BROKER)
        warnings = [r.message for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and "not connecting" in warnings[0], warnings
        assert ("no TLS context" in warnings[0]) == (protocol == SecurityProtocol.SSL)

        broker.epoch, broker.protocol = 101, SecurityProtocol.PLAINTEXT  # a new incarnation, plain
        channel.submit([lai(BROKER, epoch=101)])
        await until(lambda: channel.queue_depth(BROKER) == 0)
    assert [request.broker_epoch for _, _, request in control(broker.listener)] == [101]  # type: ignore[attr-defined]
    assert channel.unspeakable_listeners == 1 and channel.dropped_orders == 1


async def test_another_incarnation_it_cannot_speak_is_counted_again(pki: Pki, nursery: trio.Nursery) -> None:
    broker = await serve(nursery, SecurityProtocol.SSL)
    channel = channel_for(broker, None)
    await nursery.start(channel.run)
    channel.submit([lai(BROKER, epoch=100)])
    await until(lambda: channel.unspeakable_listeners == 1)
    broker.epoch = 101
    channel.submit([lai(BROKER, epoch=101)])
    await until(lambda: channel.unspeakable_listeners == 2)
    assert broker.listener.connections == 0 and channel.connection_failures == 2


async def test_a_plaintext_listener_is_plain_tcp_even_with_a_tls_context(pki: Pki, nursery: trio.Nursery) -> None:
    controller = pki.issue("controller")
    broker = await serve(nursery, SecurityProtocol.PLAINTEXT)  # a plain listener: a TLS hello would break it
    channel = channel_for(broker, client_context(controller.cert, controller.key, pki.ca))
    await nursery.start(channel.run)
    channel.submit([lai(BROKER, epoch=100)])
    await until(lambda: channel.queue_depth(BROKER) == 0)
    assert len(control(broker.listener)) == 1 and channel.connection_failures == 0


def test_the_transport_follows_the_registered_protocol() -> None:
    context = ssl.create_default_context()
    assert transport_for(SecurityProtocol.PLAINTEXT, None) is Transport.PLAINTEXT
    assert transport_for(SecurityProtocol.PLAINTEXT, context) is Transport.PLAINTEXT
    assert transport_for(SecurityProtocol.SSL, context) is Transport.TLS
    assert transport_for(SecurityProtocol.SSL, None) is None
    for code in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL, 4, -1):
        assert transport_for(code, context) is None


def test_the_client_context_checks_its_files(pki: Pki, tmp_path: Path) -> None:
    controller = pki.issue("controller")
    context = client_context(controller.cert, controller.key, pki.ca)
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert context.minimum_version >= ssl.TLSVersion.TLSv1_2
    missing = tmp_path / "missing.pem"
    for args, named in (
        ((missing, controller.key, pki.ca), missing),
        ((controller.cert, missing, pki.ca), missing),
        ((controller.cert, controller.key, missing), missing),
        ((controller.cert, controller.key, controller.key), controller.key),  # a key is no CA certificate
        ((controller.key, controller.key, pki.ca), controller.key),  # nor a certificate
    ):
        with pytest.raises(ValueError) as caught:
            client_context(*args)
        assert str(named) in str(caught.value) and "\n" not in str(caught.value)
