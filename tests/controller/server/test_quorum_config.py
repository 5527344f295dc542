"""`--controller-quorum-voters` and friends, read as Kafka reads `controller.quorum.voters`."""

from __future__ import annotations

import pytest

from controller.server.quorum_config import QuorumConfigError, Voter, parse_voters, quorum_config


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
