"""Version ranges as Kafka's message descriptions write them: "0+", "1-3", "2", "none"."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

_TOP = 0x7FFF


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive range of versions; `lowest > highest` is the empty range."""

    lowest: int
    highest: int

    @classmethod
    def parse(cls, text: str) -> Versions:
        text = text.strip()
        if text == "none":
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), _TOP)
        if "-" in text:
            low, high = text.split("-", 1)
            return cls(int(low), int(high))
        return cls(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lowest <= version <= self.highest

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.lowest, min(self.highest, _TOP) + 1))

    @property
    def empty(self) -> bool:
        return self.lowest > self.highest

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.highest == _TOP:
            return f"{self.lowest}+"
        if self.lowest == self.highest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"


NONE = Versions(1, 0)
ALL = Versions(0, _TOP)
