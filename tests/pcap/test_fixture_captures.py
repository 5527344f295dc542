"""The pcap reader on real Kafka client captures (../shared/fixtures/pcap, read in place: deepflow.py).

None of these captures holds control-plane traffic but ApiVersions: they are client-to-broker
exchanges (Produce, Fetch, the group APIs, ListOffsets), which the reader counts as other traffic
(`Other`, kind "kafka", by API and version; the job's `other_traffic`) without decoding them.
Where DeepFlow's expected parse exists, the reader is held to it twice:
- as shipped: the APIs fencer decodes come out as exchanges, every other frame is counted, and
  the counts and bytes are DeepFlow's messages';
- with every API kept (`CONTROL_PLANE_KEYS` widened to all of Kafka's keys), so that each frame
  comes out with its header: its messages are DeepFlow's, correlation ids included (counting
  does not keep them; a response counted under its request's API was paired by its id).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from analytics.pcap import DEFAULT_KAFKA_PORTS, KIND_KAFKA, Other, PcapExchange, PcapReader, Problem, kafka_api_name
from analytics.pcap import frames as frames_module
from analytics.pcap import reader as reader_module
from analytics.pcap.kafka_apis import KAFKA_API_NAMES
from analytics.pcap.packets import DROPS
from protocol.messages.api_versions import ApiVersionsResponse
from protocol.registry import decode_response

from .deepflow import (
    PORTS,
    WITH_RESULT,
    WITHOUT_RESULT,
    Expected,
    Message,
    arkime_capture,
    capture,
    deepflow_dir,
    parse_result,
)

API_KEYS = {name: key for key, name in KAFKA_API_NAMES.items()}
Counts = dict[tuple[str, int], tuple[int, int, int, int]]  # (API, version) -> requests, responses, their bytes


class Read:
    def __init__(self, path: Path, ports: frozenset[int] = DEFAULT_KAFKA_PORTS) -> None:
        self.reader = PcapReader(str(path), ports)
        items = list(self.reader.items())
        self.exchanges = [item for item in items if isinstance(item, PcapExchange)]
        self.others = [item for item in items if isinstance(item, Other)]
        self.problems = [item for item in items if isinstance(item, Problem)]


def keep_every_api(monkeypatch: pytest.MonkeyPatch) -> None:
    """Readers made from now on keep every API's frames whole, so each comes out with its header (`PcapReader`
    reads `CONTROL_PLANE_KEYS` through reader.py's name for it, which this patches)."""
    monkeypatch.setattr(reader_module, "CONTROL_PLANE_KEYS", frozenset(KAFKA_API_NAMES))


def messages(exchanges: list[PcapExchange]) -> Counter[Message]:
    found: Counter[Message] = Counter()
    for exchange in exchanges:
        name, version, correlation = kafka_api_name(exchange.api_key), exchange.api_version, exchange.correlation_id
        found[Message("Request", name, version, correlation, len(exchange.request))] += 1
        if exchange.response is not None:
            found[Message("Response", name, version, correlation, len(exchange.response))] += 1
    return found


def counted(others: list[Other]) -> Counts:
    counts: Counts = {}
    for other in others:
        assert other.kind == KIND_KAFKA and other.api_key is not None, other  # Kafka frames of a known request
        key = (kafka_api_name(other.api_key), other.api_version or 0)
        before = counts.get(key, (0, 0, 0, 0))
        added = (other.requests, other.responses, other.request_bytes, other.response_bytes)
        counts[key] = (before[0] + added[0], before[1] + added[1], before[2] + added[2], before[3] + added[3])
    return counts


def expected_counts(expected: list[Message]) -> Counts:
    counts: Counts = {}
    for message in expected:
        requests, responses, request_bytes, response_bytes = counts.get(
            (message.api_name, message.api_version), (0,) * 4
        )
        if message.kind == "Request":
            requests, request_bytes = requests + 1, request_bytes + message.size
        else:
            responses, response_bytes = responses + 1, response_bytes + message.size
        counts[(message.api_name, message.api_version)] = (requests, responses, request_bytes, response_bytes)
    return counts


def decoded_by_fencer(expected: Expected) -> bool:
    return API_KEYS[expected.message.api_name] in frames_module.CONTROL_PLANE_KEYS


def test_the_captures_are_the_ones_these_tests_name() -> None:
    """A capture added, renamed or gone fails here rather than going unread."""
    assert {path.stem for path in deepflow_dir().glob("*.pcap")} == {*WITH_RESULT, WITHOUT_RESULT}
    assert {path.stem for path in deepflow_dir().glob("*.result")} == set(WITH_RESULT)
    assert arkime_capture().is_file()


@pytest.mark.parametrize("name", WITH_RESULT)
def test_each_frame_is_the_message_deepflow_parsed(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    keep_every_api(monkeypatch)
    read = Read(capture(name), PORTS)
    assert (read.others, read.problems) == ([], [])
    assert messages(read.exchanges) == Counter(e.message for e in parse_result(deepflow_dir() / f"{name}.result"))


@pytest.mark.parametrize("name", WITH_RESULT)
def test_what_fencer_does_not_decode_is_counted_as_other_traffic(name: str) -> None:
    expected = parse_result(deepflow_dir() / f"{name}.result")
    read = Read(capture(name), PORTS)
    assert read.problems == []
    decoded = [e for e in expected if decoded_by_fencer(e)]
    assert messages(read.exchanges) == Counter(e.message for e in decoded)
    statuses = {e.message.correlation_id: e.status_code for e in decoded if e.message.kind == "Response"}
    for exchange in read.exchanges:  # the only one, ApiVersions: its error code is DeepFlow's status code
        assert exchange.response is not None
        _, response = decode_response(exchange.response, exchange.api_key, exchange.api_version)
        assert isinstance(response, ApiVersionsResponse)
        assert response.error_code == statuses[exchange.correlation_id]
    assert counted(read.others) == expected_counts([e.message for e in expected if not decoded_by_fencer(e)])


def test_the_capture_without_a_result_is_read_and_its_fetch_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    read = Read(capture(WITHOUT_RESULT), PORTS)
    assert (read.exchanges, read.problems) == ([], [])
    ((key, (requests, responses, request_bytes, response_bytes)),) = counted(read.others).items()
    assert (key, requests, responses) == (("Fetch", 12), 1, 1)
    keep_every_api(monkeypatch)
    (exchange,) = Read(capture(WITHOUT_RESULT), PORTS).exchanges
    assert exchange.response is not None  # the response carries the request's correlation id
    assert (len(exchange.request), len(exchange.response)) == (request_bytes, response_bytes)


def test_the_vlan_tagged_capture_gives_its_list_offsets_request_unanswered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Arkime's capture: Ethernet with an 802.1Q tag, a handshake, one ListOffsets v0 request, a FIN."""
    read = Read(arkime_capture())
    assert not [kind for kind in DROPS if read.reader.stats[kind]], read.reader.stats
    assert (read.exchanges, read.problems) == ([], [])
    assert counted(read.others) == {("ListOffsets", 0): (1, 0, read.others[0].request_bytes, 0)}
    keep_every_api(monkeypatch)
    (exchange,) = Read(arkime_capture()).exchanges
    assert (exchange.api_key, exchange.api_version, exchange.response, exchange.response_time_ns) == (2, 0, None, None)
    assert len(exchange.request) == read.others[0].request_bytes


def test_a_broker_on_another_port_is_read_once_its_port_is_named() -> None:
    """00-produce-v7-sw8's broker listens on 36333: as in Wireshark (`kafka.tcp.ports`), a port that
    is not a Kafka port is not read as Kafka; `--kafka-port 36333` names it."""
    unnamed = Read(capture("00-produce-v7-sw8"))
    assert (unnamed.exchanges, unnamed.others, unnamed.problems) == ([], [], [])
    assert unnamed.reader.stats["not-kafka-port-packets"] == unnamed.reader.stats["packets"] > 0
    named = Read(capture("00-produce-v7-sw8"), PORTS)
    assert [other.server.rsplit(":", 1)[1] for other in named.others] == ["36333"]
    assert counted(named.others) == {("Produce", 7): (1, 1, 308, 65)}
