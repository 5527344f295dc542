"""Requests the authorizer refused, from the writer's decisions and the quorum's RPCs alike:
each counted by API and principal (`fencer_authorization_denied`) and logged with principal and
peer, at most once per 10 s per API and principal (a client retrying a refused request must not
flood the log)."""

from __future__ import annotations

import logging
from typing import Protocol

from ..ops.authorization import RequestContext
from .logging_config import RateLimitedLogger

log = logging.getLogger("fencer.authorization")


class DenialMetrics(Protocol):
    def authorization_denied(self, api: str, principal: str) -> None: ...


class Denials:
    def __init__(self, metrics: DenialMetrics) -> None:
        self._metrics = metrics
        self._log = RateLimitedLogger(log)

    def denied(self, api_name: str, context: RequestContext, peer: str) -> None:
        """Count and log (sparsely) a request the authorizer refused."""
        self._metrics.authorization_denied(api_name, context.principal)
        self._log.log(
            logging.WARNING,
            f"{api_name} {context.principal}",
            "%s denied to %s from %s (not authorized by the ACLs)",
            api_name,
            context.principal,
            peer,
        )
