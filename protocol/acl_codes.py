"""The codes of Kafka's ACL model on the wire: resource types, pattern types, operations, permissions.

The numbers are Kafka's (org.apache.kafka.common.resource.ResourceType and PatternType,
org.apache.kafka.common.acl.AclOperation and AclPermissionType), shared by DescribeAcls (29),
CreateAcls (30) and DeleteAcls (31) and by the AccessControlEntryRecord of the metadata log.

Rules:
- Messages carry these codes as plain int8 ints; the enums name them, and their members compare
  equal to their numbers (as `ApiKey` and `ErrorCode`). A code Kafka does not know decodes as the
  int it is: what it means (Kafka reads it as UNKNOWN) is the reader's decision, not the codec's.
- UNKNOWN (0) is what a newer peer's code reads as; ANY (1) matches anything, in a filter only;
  MATCH (pattern type 2) is a filter's pattern matching. A stored ACL's pattern type is LITERAL or
  PREFIXED, which is why LITERAL (3) is the pattern type fields' default (and the only pattern
  type of v0, which has no such field).
- A message class's default is the plain int (`PatternType.LITERAL.value`), not the member: the
  compiler writes defaults into the code it generates, where a member's repr does not parse.
"""

from enum import IntEnum


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    #: from v3 of the three ACL APIs (KIP-373: delegation tokens created for other users)
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3
