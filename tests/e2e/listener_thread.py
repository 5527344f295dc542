"""A fleet broker's control listener on a real port, for tests that drive the daemon from plain threads."""

from __future__ import annotations

import threading

import trio

from broker_sim.shell.listener import BrokerControlListener


class ListenerThread:
    """A BrokerControlListener served by trio in a daemon thread."""

    def __init__(self, broker_id: int) -> None:
        self.epoch = -1
        self.listener = BrokerControlListener(broker_id, lambda: self.epoch)
        self.port = 0
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._cancel = trio.CancelScope()
        self.thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True)
        self.thread.start()
        assert self._ready.wait(10)

    async def _main(self) -> None:
        with self._cancel:
            async with trio.open_nursery() as nursery:
                self.port = await nursery.start(self.listener.serve)
                self._token = trio.lowlevel.current_trio_token()
                self._ready.set()

    def stop(self) -> None:
        if self._token is not None:
            trio.from_thread.run_sync(self._cancel.cancel, trio_token=self._token)
        self.thread.join(5)

    def received(self, api_key: int) -> list[tuple[object, object]]:
        return [(request, response) for key, _, request, response in list(self.listener.received) if key == api_key]
