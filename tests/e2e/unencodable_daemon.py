"""The daemon with one answer it cannot encode: `python -m tests.e2e.unencodable_daemon ARGS`.

Every DescribeCluster answer fails to encode (as a bug of a decision or of the codec would make
it); everything else is the real daemon. No input a peer can send makes a correct daemon's answer
unencodable (the last one, a refusal quoting a 32 KiB topic name, is cut short now), so the writer's
handling of the failure is tried through this copy.
"""

from __future__ import annotations

import sys
from typing import Any

from protocol.messages.describe_cluster import DescribeClusterResponse


def main() -> int:
    from controller.server import writer

    real = writer.encode_response

    def encode_response(body: Any, version: int, correlation_id: int) -> bytes:
        if isinstance(body, DescribeClusterResponse):
            raise ValueError("this answer cannot be encoded (tests.e2e.unencodable_daemon)")
        return real(body, version, correlation_id)

    writer.encode_response = encode_response  # type: ignore[assignment]
    from controller.__main__ import main as daemon_main

    return daemon_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
