"""Value types for command-line arguments (argparse's `type=`), one copy for every command line of
fencer: the daemon's (`controller.server.cli`) and the fleet's and simulator's (`broker_sim.cli`).
Here because this ring is the one both may import (the fleet imports nothing of the controller);
pure functions of text, like the codec.

Rules:
- Each takes the argument's text and returns its value, or raises `argparse.ArgumentTypeError`
  with a one-line message naming what was expected and what was given (argparse prints it with
  the option's name and exits 2).
- Integers are decimal digits only: no sign, no spaces, no underscores (`int()` would take them).
- An address is HOST:PORT, an IPv6 host in brackets ([::1]:9092); `host_port` is one to connect
  to (port 1-65535), `listen_address` one to bind (port 0 too: the system picks a free port).
"""

from __future__ import annotations

import argparse


def host_port(text: str) -> tuple[str, int]:
    """HOST:PORT of a listener to connect to: the port is 1-65535."""
    return _address(text, lowest_port=1)


def listen_address(text: str) -> tuple[str, int]:
    """HOST:PORT to listen on; port 0 picks a free port."""
    return _address(text, lowest_port=0)


def _address(text: str, lowest_port: int) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host.strip("[]") or not port.isdigit() or not lowest_port <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def non_negative_int(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return int(text)
