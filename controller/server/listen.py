"""Opening the daemon's TCP listeners, with a failure the CLI can print as one line.

A port already taken, an address this host does not have, or a privileged port is the operator's
mistake, not a crash: `open_listeners` turns the OSError into a `ListenError` naming the flag and
the address, which `cli.run` prints as `fencer-controller: cannot listen on ...` (exit 1).
"""

from __future__ import annotations

import trio


class ListenError(Exception):
    """A listener could not be opened: the message names the flag, the address and the reason."""


async def open_listeners(host: str, port: int, flag: str) -> list[trio.SocketListener]:
    try:
        return await trio.open_tcp_listeners(port, host=host)
    except OSError as exc:  # socket.gaierror (an unknown host) is one too
        reason = exc.strerror or str(exc)
        raise ListenError(f"cannot listen on {host}:{port} ({flag}): {reason}") from exc
