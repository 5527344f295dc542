"""Error codes: Kafka's numbers, plus fencer's own."""

from protocol.error_codes import ErrorCode, error_name


def test_numbers_used_by_the_controller() -> None:
    assert ErrorCode.STALE_BROKER_EPOCH == 77
    assert ErrorCode.FENCED_LEADER_EPOCH == 74
    assert ErrorCode.INVALID_UPDATE_VERSION == 95
    assert ErrorCode.INELIGIBLE_REPLICA == 107
    assert ErrorCode.NEW_LEADER_ELECTED == 108
    assert ErrorCode.OPERATION_NOT_ATTEMPTED == 55
    assert ErrorCode.STALE_CONTROLLER_EPOCH == 11
    assert ErrorCode.UNKNOWN_SERVER_ERROR == -1


def test_fencer_code_for_alter_replica_state() -> None:
    assert ErrorCode.UNKNOWN_REPLICA_STATE == 1000


def test_error_name() -> None:
    assert error_name(77) == "STALE_BROKER_EPOCH"
    assert error_name(4242) == "UNKNOWN(4242)"
