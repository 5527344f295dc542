"""Kafka's security protocols as listeners carry them on the wire: BrokerRegistration's listeners
and the metadata log's RegisterBrokerRecord endpoints name each listener's protocol by its code.

The numbers are Kafka's (org.apache.kafka.common.security.auth.SecurityProtocol). Messages carry
them as plain int16 ints; the enum names them and its members compare equal to their numbers. A
code Kafka does not know decodes as the int it is: what to do with it is the reader's decision.
A listener's default name is its protocol's name (Kafka's default `listener.security.protocol.map`).
"""

from enum import IntEnum


class SecurityProtocol(IntEnum):
    PLAINTEXT = 0
    SSL = 1
    SASL_PLAINTEXT = 2
    SASL_SSL = 3


def protocol_name(code: int) -> str:
    """The protocol's name, or "unknown (N)" for a code Kafka does not know."""
    try:
        return SecurityProtocol(code).name
    except ValueError:
        return f"unknown ({code})"
