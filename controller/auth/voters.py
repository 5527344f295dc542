"""Who may speak for a voter: a Raft request counts for voter N only on a connection whose principal
is voter N's, whatever the authorizer says.

A Fetch, Vote, BeginQuorumEpoch or EndQuorumEpoch names its sender by id alone (a Fetch's replica
id, a Vote's candidate, a BeginQuorumEpoch's leader). Kafka takes the id on trust and relies on
the authorizer's CLUSTER_ACTION, which brokers hold too, so any broker (or, without an
authorizer, any client) could fetch as a follower and move the high watermark past records a
majority never wrote. fencer binds the id to the connection's authenticated principal.

Rules:
- Voter N's principal is the one configured for it (`--controller-quorum-voter-principal
  N=PRINCIPAL`), else this node's own: the principal of its own certificate (`--tls-cert`, mapped
  by the principal mapping rules), as voters that share one controller identity (Kafka's usual
  `super.users` setup) all present it. Nothing is learned from the network: an identity taken
  from whatever answers at a voter's address could be taken over by anyone holding a
  certificate of the same CA for that host while the voter is down.
- `refusal(claimed, principal)`: None when the claim stands or claims no other voter (an
  observer's id, or this node's own id, which the Raft core refuses itself); otherwise why not.
- Only a listener that authenticates its clients (TLS with `--tls-ca`) can prove anything;
  without one there is no `VoterIdentities`, and a quorum of several voters runs only when the
  operator allows it (`--allow-unauthenticated-voters`, docs/controller/security.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class VoterIdentities:
    def __init__(
        self,
        node_id: int,
        voters: Iterable[int],
        own_principal: str | None,
        configured: Mapping[int, str] | None = None,
    ) -> None:
        self.node_id = node_id
        self.voters = frozenset(voters)
        self.own_principal = own_principal
        self.configured = dict(configured or {})

    def principal_of(self, voter: int) -> str | None:
        return self.configured.get(voter, self.own_principal)

    def refusal(self, claimed: int, principal: str) -> str | None:
        if claimed not in self.voters or claimed == self.node_id:
            return None
        expected = self.principal_of(claimed)
        if expected is None:
            return f"voter {claimed}'s principal is unknown (name it with --controller-quorum-voter-principal)"
        if expected != principal:
            return f"{principal} is not voter {claimed} ({expected})"
        return None
