"""The command lines' value types (protocol.arguments), shared by the daemon's and the fleet's."""

from __future__ import annotations

import argparse

import pytest

from protocol.arguments import host_port, listen_address, non_negative_int, positive_int


@pytest.mark.parametrize(
    ("text", "expected"), [("localhost:9092", ("localhost", 9092)), ("[::1]:1", ("::1", 1)), ("h:65535", ("h", 65535))]
)
def test_an_address_to_connect_to_is_host_and_a_port_from_1(text: str, expected: tuple[str, int]) -> None:
    assert host_port(text) == listen_address(text) == expected


@pytest.mark.parametrize("text", ["localhost", ":9092", "[]:9092", "h:", "h:65536", "h:-1", "h:+1", "h: 1", "h:1_0"])
def test_malformed_addresses_are_refused_by_both(text: str) -> None:
    for parse in (host_port, listen_address):
        with pytest.raises(argparse.ArgumentTypeError, match="expected HOST:PORT"):
            parse(text)


def test_port_0_is_a_free_port_to_listen_on_but_no_port_to_connect_to() -> None:
    assert listen_address("127.0.0.1:0") == ("127.0.0.1", 0)
    with pytest.raises(argparse.ArgumentTypeError):
        host_port("127.0.0.1:0")


@pytest.mark.parametrize("text", ["", "-1", "+1", " 1", "1_0", "1.0", "x"])
def test_integers_are_decimal_digits_only(text: str) -> None:
    for parse in (positive_int, non_negative_int):
        with pytest.raises(argparse.ArgumentTypeError, match="expected a"):
            parse(text)


def test_zero_is_non_negative_but_not_positive() -> None:
    assert (non_negative_int("0"), positive_int("7"), non_negative_int("0012")) == (0, 7, 12)
    with pytest.raises(argparse.ArgumentTypeError, match="positive"):
        positive_int("0")
