"""The quorum's configuration in Kafka's terms: `--controller-quorum-voters`, `--node-id`, and the
two timeouts (Kafka's `controller.quorum.voters`, `node.id`,
`controller.quorum.election.timeout.ms`, `controller.quorum.fetch.timeout.ms`).

Rules:
- Voters are `ID@HOST:PORT` entries separated by commas (IPv6 hosts in brackets), as Kafka's
  `QuorumConfig.parseVoterConnections` reads them: an id is a non-negative integer, a host is
  not the non-routable 0.0.0.0, a port is 1-65535. Kafka keeps the last of two entries with the
  same id; fencer refuses them (a typo there splits a quorum silently).
- `--node-id` must name a voter, and `--listen` must be that voter's address: the same port, and
  the same host or a wildcard (0.0.0.0, ::) that includes it. Port 0 (pick one) cannot be a
  voter's address. Without `--controller-quorum-voters` the node is the only voter, at its
  `--listen` address: a quorum of one, which commits what it fsyncs (fencer's behaviour before
  the quorum, on the same data dirs).
- Both timeouts are positive milliseconds; the fetch timeout is, in Kafka, the longer one (a
  follower that has not fetched for that long starts an election; a leader resigns after 1.5 x
  it without a majority's fetches); fencer accepts any positive pair, as Kafka does.
- A voter is who it proves to be (`controller.auth.voters`): a quorum of several voters needs a
  listener that authenticates its clients (TLS with `--tls-ca`), unless the operator says
  otherwise with `--allow-unauthenticated-voters` (then any client that reaches a voter's
  listener can act as another voter: docs/controller/security.md). A sole voter needs neither:
  no other voter's claim can be made to it. `--controller-quorum-voter-principal ID=PRINCIPAL`
  (repeatable, one per voter, a voter id of the quorum) names voter ID's principal instead of
  learning it from its certificate; it needs client authentication to mean anything.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_ELECTION_TIMEOUT_MS = 1000  # Kafka's controller.quorum.election.timeout.ms
DEFAULT_FETCH_TIMEOUT_MS = 2000  # Kafka's controller.quorum.fetch.timeout.ms
NON_ROUTABLE_HOST = "0.0.0.0"
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})
ENTRY_FORM = "each entry should be in the form `{id}@{host}:{port}`"


class QuorumConfigError(ValueError):
    """A quorum configuration that cannot work; the message names the entry or the flag."""


@dataclass(frozen=True)
class Voter:
    node_id: int
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.node_id}@{host}:{self.port}"


@dataclass(frozen=True)
class QuorumConfig:
    node_id: int
    voters: tuple[Voter, ...]  # ascending ids
    election_timeout_ms: int = DEFAULT_ELECTION_TIMEOUT_MS
    fetch_timeout_ms: int = DEFAULT_FETCH_TIMEOUT_MS
    #: voter id -> principal (`--controller-quorum-voter-principal`); empty: learned from certificates
    voter_principals: tuple[tuple[int, str], ...] = ()

    @property
    def voter_ids(self) -> tuple[int, ...]:
        return tuple(voter.node_id for voter in self.voters)

    @property
    def single(self) -> bool:
        """A quorum of one: this node alone commits."""
        return len(self.voters) == 1

    @property
    def me(self) -> Voter:
        return next(voter for voter in self.voters if voter.node_id == self.node_id)

    def peers(self) -> tuple[Voter, ...]:
        return tuple(voter for voter in self.voters if voter.node_id != self.node_id)


def parse_voter_principal(text: str) -> tuple[int, str]:
    """`2=User:CN=controller-2` -> (2, "User:CN=controller-2") (`QuorumConfigError` if malformed)."""
    node, equals, principal = text.partition("=")
    node = node.strip()
    if not equals or not node.isdigit() or not principal.strip():
        raise QuorumConfigError(f"invalid voter principal {text!r}: expected ID=PRINCIPAL, e.g. 2=User:CN=controller-2")
    return int(node), principal.strip()


def check_voter_authentication(
    config: QuorumConfig, *, clients_authenticated: bool, allow_unauthenticated: bool
) -> None:
    """Refuse a quorum whose voters cannot be told from anyone else (see the module's rules)."""
    named = dict(config.voter_principals)
    unknown = sorted(set(named) - set(config.voter_ids))
    if unknown:
        raise QuorumConfigError(f"--controller-quorum-voter-principal names {unknown[0]}, not a voter")
    if len(named) != len(config.voter_principals):
        raise QuorumConfigError("--controller-quorum-voter-principal names a voter twice")
    if named and not clients_authenticated:
        raise QuorumConfigError("--controller-quorum-voter-principal needs client certificates (--tls-ca)")
    if not config.single and not clients_authenticated and not allow_unauthenticated:
        raise QuorumConfigError(
            "a quorum of several voters needs client certificates (--tls-cert, --tls-key and --tls-ca) so "
            "that a voter is who it says it is; --allow-unauthenticated-voters runs it without them (anyone "
            "who reaches a voter's listener can then act as a voter)"
        )


def parse_voters(text: str) -> tuple[Voter, ...]:
    """`1@host:9093,2@host:9094` -> voters in ascending id order (`QuorumConfigError` if malformed)."""
    voters: dict[int, Voter] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            raise QuorumConfigError(f"an empty voter entry in {text!r}: {ENTRY_FORM}")
        node, at, address = entry.partition("@")
        if not at or "@" in address:
            raise QuorumConfigError(f"invalid voter entry {entry!r}: {ENTRY_FORM}")
        if not node.isdigit():
            raise QuorumConfigError(f"invalid voter id in {entry!r}: a non-negative integer, {ENTRY_FORM}")
        host, colon, port = address.rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if not colon or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise QuorumConfigError(f"cannot parse the host and port of {entry!r}: {ENTRY_FORM}")
        if host == NON_ROUTABLE_HOST:
            raise QuorumConfigError(f"host {host} of {entry!r} is not routable: name the voter's own address")
        voter = Voter(int(node), host, int(port))
        if voter.node_id in voters:
            raise QuorumConfigError(f"voter id {voter.node_id} appears twice: {voters[voter.node_id]} and {voter}")
        voters[voter.node_id] = voter
    return tuple(voters[node_id] for node_id in sorted(voters))


def quorum_config(
    node_id: int,
    listen: tuple[str, int],
    voters_text: str | None,
    *,
    election_timeout_ms: int = DEFAULT_ELECTION_TIMEOUT_MS,
    fetch_timeout_ms: int = DEFAULT_FETCH_TIMEOUT_MS,
    voter_principals: tuple[tuple[int, str], ...] = (),
) -> QuorumConfig:
    """The node's quorum from its flags (see the module's rules)."""
    if election_timeout_ms <= 0 or fetch_timeout_ms <= 0:
        raise QuorumConfigError("the election and fetch timeouts must be positive milliseconds")
    host, port = listen
    if voters_text is None:
        voters: tuple[Voter, ...] = (Voter(node_id, host, port),)
    else:
        voters = parse_voters(voters_text)
        mine = [voter for voter in voters if voter.node_id == node_id]
        if not mine:
            named = ", ".join(str(voter.node_id) for voter in voters)
            raise QuorumConfigError(f"--node-id {node_id} is not among the voters ({named})")
        me = mine[0]
        if port != me.port or (host != me.host and host not in WILDCARD_HOSTS):
            raise QuorumConfigError(
                f"--listen {host}:{port} is not voter {node_id}'s address {me.host}:{me.port} "
                "(the same port, and the same host or a wildcard)"
            )
    return QuorumConfig(node_id, voters, election_timeout_ms, fetch_timeout_ms, voter_principals)
