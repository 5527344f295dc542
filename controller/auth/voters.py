"""Who may speak for a voter: a Raft request counts for voter N only on a connection whose principal
is voter N's, whatever the authorizer says.

A Fetch, Vote, BeginQuorumEpoch or EndQuorumEpoch names its sender by id alone (a Fetch's replica
id, a Vote's candidate, a BeginQuorumEpoch's leader). Kafka takes the id on trust and relies on
the authorizer's CLUSTER_ACTION, which brokers hold too, so any broker (or, without an
authorizer, any client) could fetch as a follower and move the high watermark past records a
majority never wrote. fencer binds the id to the connection's authenticated principal.

Rules:
- Voter N's principal is configured (`--controller-quorum-voter-principal N=PRINCIPAL`), or,
  without that flag, learned: the principal of the certificate voter N's own listener presents
  to this node's link (checked against the CA and voter N's host, the proof any TLS client has
  of its server), taken again at every connection. Voters' listeners and links present the same
  certificate (`--tls-cert`), so what voter N presents as a server is what it presents as a client.
- `refusal(claimed, principal)`: None when the claim stands or claims no other voter (an
  observer's id, or this node's own id, which the Raft core refuses itself); otherwise why not:
  the principal is not voter N's, or voter N's is not known yet (then the caller asks its link
  to voter N to connect, and the claimant's next try may stand).
- Only a listener that authenticates its clients (TLS with `--tls-ca`) can prove anything;
  without one there is no `VoterIdentities`, and a quorum of several voters runs only when the
  operator allows it (`--allow-unauthenticated-voters`, README's security section).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class VoterIdentities:
    def __init__(self, node_id: int, voters: Iterable[int], configured: Mapping[int, str] | None = None) -> None:
        self.node_id = node_id
        self.voters = frozenset(voters)
        self.configured = dict(configured) if configured else None
        self._learned: dict[int, str] = {}

    def principal_of(self, voter: int) -> str | None:
        if self.configured is not None:
            return self.configured.get(voter)
        return self._learned.get(voter)

    def learn(self, voter: int, principal: str) -> None:
        """Voter `voter`'s listener presented `principal` to this node's link (verified)."""
        if self.configured is None and voter in self.voters:
            self._learned[voter] = principal

    def refusal(self, claimed: int, principal: str) -> str | None:
        if claimed not in self.voters or claimed == self.node_id:
            return None
        expected = self.principal_of(claimed)
        if expected is None:
            return f"voter {claimed}'s principal is not known yet (its listener has not been reached)"
        if expected != principal:
            return f"{principal} is not voter {claimed} ({expected})"
        return None
