"""Java's string behaviours that Kafka's configs and orderings depend on.

Rules: `java_trim` removes every char <= U+0020 at both ends (String.trim), not Unicode whitespace;
`java_order` sorts strings as String.compareTo does (by UTF-16 code unit, which differs from
Python's code point order above U+FFFF).
"""

from __future__ import annotations

_TRIMMED = "".join(chr(code) for code in range(0x21))


def java_trim(text: str) -> str:
    """String.trim()."""
    return text.strip(_TRIMMED)


def java_order(text: str) -> bytes:
    """A sort key ordering strings as String.compareTo does."""
    return text.encode("utf-16-be", "surrogatepass")
