"""What the pcap reader's tests expect of crafted captures: a capture read into its three kinds of
items, and heartbeat conversations with the exchanges the reader must give for them.

Purpose: the expectations test_reader.py and test_reassembly.py share; craft.py builds the captures.
"""

from __future__ import annotations

from pathlib import Path

from analytics.pcap import DEFAULT_KAFKA_PORTS, Other, PcapExchange, Problem, read_pcap
from protocol.capture import INBOUND

from .craft import BASE_US, KAFKA_PORT, Flow, Pkt, heartbeat, heartbeat_response, ns, payload

Items = tuple[list[PcapExchange], list[Other], list[Problem]]


def read(path: Path, ports: frozenset[int] = DEFAULT_KAFKA_PORTS) -> Items:
    exchanges, others, problems = [], [], []
    for item in read_pcap(str(path), ports):
        if isinstance(item, PcapExchange):
            exchanges.append(item)
        elif isinstance(item, Other):
            others.append(item)
        else:
            problems.append(item)
    return exchanges, others, problems


def exchange(
    correlation: int, request_us: int, response_us: int | None, connection: int = 1, peer: str = "10.0.0.1:50000"
) -> PcapExchange:
    """The exchange of heartbeat `correlation` (answered unless `response_us` is None)."""
    server = "[fd00::2]:9093" if peer.startswith("[") else f"10.0.0.2:{KAFKA_PORT}"
    return PcapExchange(
        ns(request_us),
        None if response_us is None else ns(response_us),
        INBOUND,
        connection,
        peer,
        63,
        1,
        correlation,
        payload(heartbeat(correlation)),
        None if response_us is None else payload(heartbeat_response(correlation)),
        server,
    )


def conversation(flow: Flow, correlations: range, start_us: int = BASE_US, handshake: bool = True) -> list[Pkt]:
    """Handshake, then per correlation id a heartbeat at start + 100 i + 10 and its response at + 20, then FINs."""
    packets = flow.handshake(start_us) if handshake else []
    for index, correlation in enumerate(correlations):
        packets += flow.request(heartbeat(correlation), start_us + 100 * index + 10)
        packets += flow.response(heartbeat_response(correlation), start_us + 100 * index + 20)
    return packets + flow.close(start_us + 100 * len(correlations) + 50)


def expected(correlations: range, start_us: int = BASE_US, **kwargs: int | str) -> list[PcapExchange]:
    return [
        exchange(c, start_us + 100 * i + 10, start_us + 100 * i + 20, **kwargs)  # type: ignore[arg-type]
        for i, c in enumerate(correlations)
    ]
