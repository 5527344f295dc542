"""Header version rules, including Kafka's two exceptions."""

import pytest

from protocol.headers import request_header_version, response_header_version


@pytest.mark.parametrize(
    ("key", "version", "flexible", "expected"),
    [(7, 0, False, 0), (7, 1, False, 1), (7, 3, True, 2), (56, 0, True, 2), (18, 2, False, 1), (18, 3, True, 2)],
)
def test_request_header_version(key: int, version: int, flexible: bool, expected: int) -> None:
    assert request_header_version(key, version, flexible) == expected


@pytest.mark.parametrize(("key", "flexible", "expected"), [(18, True, 0), (18, False, 0), (56, True, 1), (4, False, 0)])
def test_response_header_version(key: int, flexible: bool, expected: int) -> None:
    assert response_header_version(key, flexible) == expected
