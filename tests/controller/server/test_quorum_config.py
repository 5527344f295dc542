"""`--controller-quorum-voters` and friends, read as Kafka reads `controller.quorum.voters`."""

from __future__ import annotations

import pytest

from controller.auth.voters import VoterIdentities
from controller.server.quorum_config import (
    QuorumConfigError,
    Voter,
    check_voter_authentication,
    parse_voter_principal,
    parse_voters,
    quorum_config,
)


def test_voters_parse_as_kafka_writes_them_in_id_order() -> None:
    voters = parse_voters("3@c3.example:9095, 1@10.0.0.1:9093,2@[::1]:9094")
    assert voters == (Voter(1, "10.0.0.1", 9093), Voter(2, "::1", 9094), Voter(3, "c3.example", 9095))
    assert [str(voter) for voter in voters] == ["1@10.0.0.1:9093", "2@[::1]:9094", "3@c3.example:9095"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1@localhost", "cannot parse the host and port"),
        ("1@:9093", "cannot parse the host and port"),
        ("1@h:0", "cannot parse the host and port"),
        ("1@h:70000", "cannot parse the host and port"),
        ("localhost:9093", "invalid voter entry"),
        ("1@a@b:1", "invalid voter entry"),
        ("x@h:1", "invalid voter id"),
        ("-1@h:1", "invalid voter id"),
        ("1@0.0.0.0:9093", "not routable"),
        ("1@h:1,,2@h:2", "an empty voter entry"),
        ("1@h:1,1@h:2", "voter id 1 appears twice"),
    ],
)
def test_a_malformed_voter_list_is_refused_naming_the_entry(text: str, message: str) -> None:
    with pytest.raises(QuorumConfigError, match=message):
        parse_voters(text)


def test_without_voters_the_node_is_a_quorum_of_one_at_its_listen_address() -> None:
    config = quorum_config(4, ("127.0.0.1", 9093), None)
    assert config.single and config.voters == (Voter(4, "127.0.0.1", 9093),) and config.peers() == ()
    assert (config.election_timeout_ms, config.fetch_timeout_ms) == (1000, 2000)  # Kafka's defaults


def test_the_node_must_be_a_voter_listening_at_its_own_address() -> None:
    voters = "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095"
    config = quorum_config(2, ("127.0.0.1", 9094), voters)
    assert not config.single and config.me == Voter(2, "127.0.0.1", 9094)
    assert [peer.node_id for peer in config.peers()] == [1, 3]
    assert quorum_config(2, ("0.0.0.0", 9094), voters).me.port == 9094  # a wildcard includes it
    with pytest.raises(QuorumConfigError, match="--node-id 4 is not among the voters"):
        quorum_config(4, ("127.0.0.1", 9094), voters)
    with pytest.raises(QuorumConfigError, match="is not voter 2's address"):
        quorum_config(2, ("127.0.0.1", 9093), voters)
    with pytest.raises(QuorumConfigError, match="is not voter 2's address"):
        quorum_config(2, ("127.0.0.1", 0), voters)
    with pytest.raises(QuorumConfigError, match="positive"):
        quorum_config(2, ("127.0.0.1", 9094), voters, fetch_timeout_ms=0)


def test_a_quorum_of_several_voters_needs_client_certificates_or_the_operators_word() -> None:
    voters = "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095"
    config = quorum_config(2, ("127.0.0.1", 9094), voters)
    with pytest.raises(QuorumConfigError, match=r"needs client certificates.*--allow-unauthenticated-voters"):
        check_voter_authentication(config, clients_authenticated=False, allow_unauthenticated=False)
    check_voter_authentication(config, clients_authenticated=False, allow_unauthenticated=True)
    check_voter_authentication(config, clients_authenticated=True, allow_unauthenticated=False)
    sole = quorum_config(1, ("127.0.0.1", 9093), None)  # nobody else's claim can be made to a sole voter
    check_voter_authentication(sole, clients_authenticated=False, allow_unauthenticated=False)


def test_voter_principals_name_voters_once_and_need_client_certificates() -> None:
    assert parse_voter_principal("2=User:CN=controller-2,O=x") == (2, "User:CN=controller-2,O=x")
    for text in ("2", "x=User:a", "2=", "=User:a"):
        with pytest.raises(QuorumConfigError, match="ID=PRINCIPAL"):
            parse_voter_principal(text)
    voters = "1@127.0.0.1:9093,2@127.0.0.1:9094"

    def check(principals: tuple[tuple[int, str], ...], authenticated: bool = True) -> None:
        config = quorum_config(1, ("127.0.0.1", 9093), voters, voter_principals=principals)
        check_voter_authentication(config, clients_authenticated=authenticated, allow_unauthenticated=True)

    check(((1, "User:a"), (2, "User:b")))
    with pytest.raises(QuorumConfigError, match="names 7, not a voter"):
        check(((7, "User:a"),))
    with pytest.raises(QuorumConfigError, match="names a voter twice"):
        check(((2, "User:a"), (2, "User:b")))
    with pytest.raises(QuorumConfigError, match="needs client certificates"):
        check(((2, "User:b"),), authenticated=False)


def test_a_voter_is_the_principal_named_for_it_else_this_nodes_own() -> None:
    shared = VoterIdentities(1, (1, 2, 3), "User:controller")  # voters sharing one certificate
    assert shared.refusal(2, "User:controller") is None
    assert "is not voter 2" in str(shared.refusal(2, "User:broker"))
    assert shared.refusal(9, "User:broker") is None  # an observer's id proves nothing and claims nothing
    assert shared.refusal(1, "User:broker") is None  # this node's own id: the Raft core refuses that itself
    named = VoterIdentities(1, (1, 2, 3), "User:c1", {2: "User:c2"})
    assert named.refusal(2, "User:c2") is None and named.refusal(2, "User:c1") is not None
    assert named.refusal(3, "User:c1") is None  # not named: this node's own
    unmappable = VoterIdentities(1, (1, 2, 3), None)  # this node's certificate maps to no principal
    assert "--controller-quorum-voter-principal" in str(unmappable.refusal(2, "User:c2"))
