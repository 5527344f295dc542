"""Opening the daemon's TCP listeners, with a failure the CLI can print as one line.

A port already taken, an address this host does not have, or a privileged port is the operator's
mistake, not a crash: `open_listeners` turns the OSError into a `ListenError` naming the flag and
the address, which `cli.run` prints as `fencer-controller: cannot listen on ...` (exit 1).
"""

from __future__ import annotations

from typing import Any

import trio

from .. import runtime


class ListenError(Exception):
    """A listener could not be opened: the message names the flag, the address and the reason."""


async def open_listeners(host: str, port: int, flag: str) -> list[trio.abc.Listener[Any]]:
    try:
        return list(await runtime.current().open_tcp_listeners(port, host))
    except OSError as exc:  # socket.gaierror (an unknown host) is one too
        reason = exc.strerror or str(exc)
        raise ListenError(f"cannot listen on {host}:{port} ({flag}): {reason}") from exc


def bound_port(listener: trio.abc.Listener[Any]) -> int:
    """The port a listener took (a port-0 bind's choice): a socket listener's, or a simulated one's."""
    return int(listener.socket.getsockname()[1])  # type: ignore[attr-defined]
