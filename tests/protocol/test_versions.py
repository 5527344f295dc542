"""Version ranges as Kafka writes them."""

import pytest

from protocol.versions import Versions


@pytest.mark.parametrize(
    ("text", "low", "high", "members", "outside"),
    [("0+", 0, 0x7FFF, [0, 5, 100], [-1]), ("1-3", 1, 3, [1, 2, 3], [0, 4]), ("2", 2, 2, [2], [1, 3])],
)
def test_parse_and_membership(text: str, low: int, high: int, members: list[int], outside: list[int]) -> None:
    versions = Versions.parse(text)
    assert (versions.lowest, versions.highest) == (low, high)
    assert all(v in versions for v in members)
    assert not any(v in versions for v in outside)
    assert str(versions) == text


def test_none_is_empty() -> None:
    versions = Versions.parse("none")
    assert versions.empty
    assert 0 not in versions
    assert list(versions) == []
    assert str(versions) == "none"


def test_iteration_is_inclusive() -> None:
    assert list(Versions.parse("2-4")) == [2, 3, 4]


def test_non_int_is_not_a_member() -> None:
    assert "1" not in Versions.parse("0+")
