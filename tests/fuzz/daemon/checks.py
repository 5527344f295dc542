"""Judging one frame: was it refused, was its answer sound, did a daemon die or log a traceback.

A request is *refused* when the daemon closed the connection without answering it, or when its
answer refuses everything in it: a non-zero top-level error code, or (the top level being 0 or
absent) per-item error codes that are all non-zero. A top-level 0 only says the request as a
whole was not refused; its items say what was done. Anything else is *accepted*, and may change
anything. A refused request must change nothing an `observe.Observation` holds.

Findings besides changes: a daemon that exited; a new `Traceback` on a daemon's stderr (read
incrementally: a request the daemon failed to decide or to encode an answer for is logged with
its traceback, then closed unanswered); an answer that does not decode as that API's response or
carries another correlation id; a frame neither answered nor closed within
`client.STALL_SECONDS`; a bystander heartbeat not answered within `client.HEARTBEAT_DEADLINE`, closed, or refused.
A well-formed request closed unanswered is not a finding by itself (the daemon refuses requests
Kafka would fail to parse that way, e.g. CreateAcls naming an UNKNOWN resource type); the run
counts them by API and version for review.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import DecodeError
from protocol.registry import decode_response
from protocol.spec import Array, Data, Struct, fields_of

from .frames import Frame, api_name


@dataclass(frozen=True, slots=True)
class Finding:
    setup: str
    seed: int
    frame: int  # the frame's index in the set-up's sequence
    hex: str
    summary: str
    what: str  # the kind of symptom: exit, traceback, refused-change, stall, ...
    detail: str
    stderr_tail: str = ""

    @property
    def api(self) -> str:
        """The request's API, as its summary starts (`Vote v2: ...`)."""
        return self.summary.split(" v", 1)[0] if self.summary else "-"

    @property
    def symptom(self) -> str:
        """What two findings share when they are the same bug: the kind, then the exception and
        where it was raised, or what changed (top-level parts) and the refused API, or the API
        that stalled; numbers and ids left out."""
        if self.what == "refused-change":
            parts = {_part(line) for line in self.detail.split("; ")}
            return f"refused-change: {self.api}: {', '.join(sorted(parts))}"
        if self.what in ("stall", "garbled-answer"):
            return f"{self.what}: {self.api}"
        raised = _RAISED.search(self.detail)
        if self.what in ("traceback", "exit") and raised:
            return f"{self.what}: {raised[1].rsplit('.', 1)[-1]} in {raised[2]}"
        return f"{self.what}: {_numbers_out(self.detail)}"

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "symptom": self.symptom}


def _part(line: str) -> str:
    """The part of an observation a difference is in: `state.quorum`, `state`, `describe_quorum`,
    `quorum_state_file` (`state.quorum.epoch: 1 -> 2` is in `state.quorum`)."""
    path = line.removeprefix("(transient) ").split(": ", 1)[0].split(".")
    return "state.quorum" if path[:2] == ["state", "quorum"] else path[0]


#: `SomeError: message (in function)` as `traceback_summary` writes it, inside a finding's detail
_RAISED = re.compile(
    r"([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Cancelled|Timeout))\b.*\(in ([^)]*)\)$"
)


def _numbers_out(text: str) -> str:
    return re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}|-?\b[0-9]+\b", "N", text)


def error_codes(message: Data) -> tuple[int | None, list[int]]:
    """(top-level error code or None, every nested one) of a response."""
    top = message.error_code if any(info.name == "error_code" for info in fields_of(type(message))) else None  # type: ignore[attr-defined]
    items: list[int] = []
    _collect(message, items, top_level=True)
    return top, items


def _collect(message: Data, found: list[int], top_level: bool = False) -> None:
    for info in fields_of(type(message)):
        value = getattr(message, info.name)
        if info.name == "error_code" and not top_level:
            found.append(value)
        wire = info.spec.wire
        if isinstance(wire, Struct) and isinstance(value, Data):
            _collect(value, found)
        elif isinstance(wire, Array) and isinstance(wire.element, type) and value:
            for element in value:
                _collect(element, found)


def refuses_everything(answer: Data) -> bool:
    top, items = error_codes(answer)
    if top:
        return True
    return bool(items) and all(code != 0 for code in items)


@dataclass(frozen=True, slots=True)
class Verdict:
    refused: bool | None  # None: unknown (a stall: whether it was acted on cannot be told)
    problem: tuple[str, str] | None  # (what, detail) of a finding
    answer: Data | None = None


def judge(frame: Frame, kind: str, payload: bytes | None) -> Verdict:
    """What the daemon's reaction to `frame` says."""
    name = f"{api_name(frame.api_key)} v{frame.version}"
    if kind == "stall":
        return Verdict(None, ("stall", f"{name}: neither answered nor closed"))
    if kind == "unreachable":
        return Verdict(None, ("unreachable", "no connection could be opened"))
    if kind == "closed" or payload is None:
        return Verdict(True, None)
    if frame.api_key is None:
        return Verdict(False, ("garbled-answer", "an answer to a frame with no api key"))
    try:
        header, answer = _decode(payload, frame.api_key, frame.version)
    except DecodeError as exc:
        return Verdict(False, ("garbled-answer", f"{name}: the answer does not decode: {exc}"))
    if header.correlation_id != frame.correlation_id:
        detail = f"{name}: correlation id {header.correlation_id}, sent {frame.correlation_id}"
        return Verdict(False, ("garbled-answer", detail), answer)
    return Verdict(refuses_everything(answer), None, answer)


def _decode(payload: bytes, key: int, version: int) -> tuple[Any, Data]:
    if key == ApiKey.API_VERSIONS:
        try:
            return decode_response(payload, key, version)
        except DecodeError:
            return decode_response(payload, key, 0)  # KIP-511: an unsupported version gets a v0 body
    return decode_response(payload, key, version)


class StderrWatcher:
    """What a daemon wrote to its stderr file since the last look."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.tail = ""

    def new_text(self) -> str:
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            return ""
        if size <= self.offset:
            return ""
        with open(self.path, "rb") as file:
            file.seek(self.offset)
            data = file.read(size - self.offset)
        self.offset = size
        text = data.decode(errors="replace")
        self.tail = (self.tail + text)[-4000:]
        return text


#: an exception line of a traceback: a (dotted) exception class name, then maybe its message
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Cancelled|Timeout))(?::.*)?$")


def traceback_summary(text: str) -> str:
    """The last exception line of the first traceback in `text` (the innermost of an exception
    group), with the function it was raised in."""
    lines = [re.sub(r"^[\s|+-]*", "", line) for line in text.splitlines()]
    start = next((i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line), None)
    if start is None:
        return ""
    found, where = "", "?"
    for line in lines[start:]:
        if line.startswith('File "'):
            where = line.rsplit(", in ", 1)[-1]
            continue
        match = _EXCEPTION_LINE.match(line)
        if match and not match[1].endswith("ExceptionGroup"):
            found = f"{line[:200]} (in {where})"
    return found or lines[-1][:200]
