"""Which APIs exist, at which versions, and frame-level encode/decode.

`decode_request(payload)` reads the api key and version, picks the header version by Kafka's
rules, decodes header and body and insists that nothing trails the body. Unknown api keys and
unsupported versions raise `UnknownApiError` / `UnsupportedVersionError` carrying the
correlation id (when it could be read), so that the shell can apply KIP-511's ApiVersions
fallback or close the connection. Responses carry no api key: the caller says what it expects.
"""

from __future__ import annotations

import importlib
import pkgutil
import struct
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any

from . import messages
from .api_keys import ApiKey
from .compiler import Codec, codec
from .errors import DecodeError, TruncatedError, UnknownApiError, UnsupportedVersionError
from .framing import frame
from .headers import RequestHeader, ResponseHeader, request_header_version, response_header_version
from .spec import REQUEST, RESPONSE, Data
from .versions import Versions

#: the modules of protocol.messages, one per API: each declares its request and response classes
_MODULES = tuple(
    importlib.import_module(f"{messages.__name__}.{module.name}")
    for module in sorted(pkgutil.iter_modules(messages.__path__), key=lambda module: module.name)
)


def _table(modules: tuple[ModuleType, ...]) -> dict[int, tuple[str, type[Data], type[Data]]]:
    """Every API: its name, request and response classes, read from the classes themselves (the
    top-level messages of a module, the ones with an `API`; the name is the request's, without
    "Request"). Raises `TypeError` unless each module holds one request and one response of one
    key, and no key is in two modules."""
    table: dict[int, tuple[str, type[Data], type[Data]]] = {}
    for module in modules:
        found: dict[str, list[type[Data]]] = {REQUEST: [], RESPONSE: []}
        classes = {value for value in vars(module).values() if isinstance(value, type)}  # a class may be aliased
        for value in sorted(classes, key=lambda cls: cls.__name__):
            if issubclass(value, Data) and "API" in vars(value):
                found[value.API.kind].append(value)
        if len(found[REQUEST]) != 1 or len(found[RESPONSE]) != 1:
            raise TypeError(f"{module.__name__} must declare one request and one response, not {found}")
        (request,), (response,) = found[REQUEST], found[RESPONSE]
        key = request.API.key
        if response.API.key != key or key in table or not request.__name__.endswith("Request"):
            raise TypeError(f"{module.__name__}: {request.__name__} and {response.__name__} are no API of their own")
        table[ApiKey(key)] = (request.__name__.removesuffix("Request"), request, response)
    return dict(sorted(table.items()))


_APIS = _table(_MODULES)

_KEY_VERSION = struct.Struct(">hh")
_CORRELATION = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class ApiInfo:
    key: ApiKey
    name: str
    request: type[Data]
    response: type[Data]

    @property
    def versions(self) -> Versions:
        return self.request.API.valid

    def request_flexible(self, version: int) -> bool:
        return version in self.request.API.flexible

    def response_flexible(self, version: int) -> bool:
        return version in self.response.API.flexible


@cache
def api(key: int) -> ApiInfo:
    """The API with this key; `KeyError` if there is none."""
    name, request, response = _APIS[key]
    return ApiInfo(ApiKey(key), name, request, response)


def all_apis() -> list[ApiInfo]:
    return [api(key) for key in sorted(_APIS)]


def compile_codecs(keys: frozenset[int]) -> None:
    """Compile the request and response codecs of `keys` at every version, and the headers', now
    rather than at first use (a process that forks many short runs pays for them once)."""
    for key in sorted(keys):
        info = api(key)
        for version in info.versions:
            _request_codecs(key, version, None)
            codec(info.response, version)
            codec(ResponseHeader, response_header_version(info.key, info.response_flexible(version)))


def api_keys() -> list[int]:
    return sorted(_APIS)


@dataclass(frozen=True, slots=True)
class Request:
    """A decoded request: its header and body."""

    header: RequestHeader
    body: Data

    @property
    def api_key(self) -> int:
        return self.header.request_api_key

    @property
    def api_version(self) -> int:
        return self.header.request_api_version

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id


def peek_request(payload: bytes) -> tuple[int, int, int | None]:
    """(api key, api version, correlation id or None) without decoding anything else."""
    if len(payload) < 4:
        raise TruncatedError(f"request of {len(payload)} bytes has no api key and version")
    key, version = _KEY_VERSION.unpack_from(payload, 0)
    correlation = _CORRELATION.unpack_from(payload, 4)[0] if len(payload) >= 8 else None
    return key, version, correlation


def decode_request(payload: bytes, allowed: frozenset[int] | None = None) -> Request:
    """Decode one request frame payload (no size prefix).

    `allowed` limits the api keys accepted (a listener's: the APIs it serves); others raise
    `UnknownApiError` as if the key did not exist.
    """
    key, version, correlation = peek_request(payload)
    if allowed is not None and key not in allowed:
        raise UnknownApiError(key, version, correlation)
    codecs = _REQUEST_CODECS.get((key, version)) or _request_codecs(key, version, correlation)
    header, pos = codecs[0].decode(payload, 0)
    return Request(header, codecs[1].decode_exact(payload, pos))


#: (api key, version) -> (header codec, body codec), for the pairs that exist
_REQUEST_CODECS: dict[tuple[int, int], tuple[Codec[RequestHeader], Codec[Any]]] = {}


def _request_codecs(key: int, version: int, correlation: int | None) -> tuple[Codec[RequestHeader], Codec[Any]]:
    if key not in _APIS:
        raise UnknownApiError(key, version, correlation)
    info = api(key)
    if version not in info.versions:
        raise UnsupportedVersionError(key, version, correlation)
    header_version = request_header_version(key, version, info.request_flexible(version))
    found = _REQUEST_CODECS[(key, version)] = (codec(RequestHeader, header_version), codec(info.request, version))
    return found


def encode_request(body: Data, version: int, correlation_id: int, client_id: str | None = "fencer") -> bytes:
    """A complete request frame (size prefix included)."""
    key = body.API.key
    info = api(key)
    header_version = request_header_version(key, version, info.request_flexible(version))
    header = RequestHeader(
        request_api_key=key,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id=client_id if header_version > 0 else None,
    )
    out = bytearray()
    codec(RequestHeader, header_version).encode_into(header, out)
    codec(info.request, version).encode_into(body, out)
    return frame(out)


def encode_response(body: Data, version: int, correlation_id: int) -> bytes:
    """A complete response frame (size prefix included)."""
    plan = _RESPONSE_PLANS.get((type(body), version)) or _response_plan(body, version)
    out = bytearray(_SIZE_AND_CORRELATION.pack(0, correlation_id))
    out += plan[0]
    plan[1].encode_into(body, out)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


_SIZE = struct.Struct(">i")
_SIZE_AND_CORRELATION = struct.Struct(">ii")
#: (response class, version) -> (what follows the correlation id in its header, body codec)
_RESPONSE_PLANS: dict[tuple[type[Data], int], tuple[bytes, Codec[Any]]] = {}


def _response_plan(body: Data, version: int) -> tuple[bytes, Codec[Any]]:
    info = api(body.API.key)
    header_version = response_header_version(info.key, info.response_flexible(version))
    header = codec(ResponseHeader, header_version).encode(ResponseHeader(correlation_id=0))
    assert header[:4] == bytes(4), "a response header starts with its correlation id"
    found = _RESPONSE_PLANS[(type(body), version)] = (header[4:], codec(info.response, version))
    return found


def decode_response(payload: bytes, api_key: int, version: int) -> tuple[ResponseHeader, Data]:
    """Decode one response frame payload for a request of `api_key` at `version`."""
    if api_key not in _APIS:
        raise DecodeError(f"no response schema for api key {api_key}")
    info = api(api_key)
    if version not in info.versions:
        raise DecodeError(f"no response schema for version {version} of api key {api_key}")
    header_version = response_header_version(api_key, info.response_flexible(version))
    header, pos = codec(ResponseHeader, header_version).decode(payload, 0)
    try:
        return header, codec(info.response, version).decode_exact(payload, pos)
    except DecodeError:
        if api_key != ApiKey.API_VERSIONS or version == 0:
            raise
        # KIP-511: a server that does not speak our ApiVersions version answers with a v0 body
        return header, codec(info.response, 0).decode_exact(payload, pos)
