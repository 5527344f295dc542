"""The daemon benchmark's baseline: a minimal trio server that frames requests and echoes them back.

It does what any Kafka server must do at the least (accept, read frames through the same sans-IO
`FrameBuffer`, answer each in order) and nothing else: no decoding, no decisions, no disk.
Run: `python benchmarks/echo_server.py [PORT]`; it prints `listening on HOST:PORT`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.framing import FrameBuffer, frame


async def echo(stream: trio.SocketStream) -> None:
    buffer = FrameBuffer()
    try:
        while data := await stream.receive_some(65536):
            buffer.receive_data(data)
            replies = [frame(payload) for payload in buffer.frames()]
            if replies:
                await stream.send_all(b"".join(replies))
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


async def main(port: int) -> None:
    listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
    print(f"listening on 127.0.0.1:{listeners[0].socket.getsockname()[1]}", flush=True)
    await trio.serve_listeners(echo, listeners)


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 0)
