"""What the log holds that the controller keeps but does not act on: configs, feature levels,
ACLs, client quotas, SCRAM credentials, delegation tokens, producer id blocks, registered
controllers and the ZooKeeper migration state (the state of Kafka's ConfigurationControlManager,
FeatureControlManager, AclControlManager, ClientQuotaControlManager, ScramControlManager,
DelegationTokenControlManager, ProducerIdControlManager and ClusterControlManager's controllers).

Rules:
- `replay_*` are the only mutations, with Kafka's semantics: a ConfigRecord whose value is null
  deletes the key (and a resource left with no key is forgotten); a topic's configs go with the
  topic (`drop_topic_configs`, called on RemoveTopicRecord); a feature at level 0 is removed
  (but metadata.version, which has no level 0); a ClientQuotaRecord with `remove` deletes the
  key (an entity left with none is forgotten); a ProducerIdsRecord must move the next producer
  id forward; removing an ACL or a SCRAM credential that is not there is a corrupt log
  (`ReplayError`, as Kafka), removing an unknown delegation token is nothing (as Kafka).
- ACLs, SCRAM credentials, delegation tokens and controller registrations are kept as the
  records that made them: immutable typed values, written back as they are by a snapshot.
- Every value kept is immutable, and what holds several (a resource's configs, an entity's
  quotas) is replaced at each change, never edited, so `frozen()` copies only the outer dicts,
  and only after a replay changed something (the copy is kept until then).
- Secrets (SCRAM salts and keys) are kept, since a snapshot must carry them, but only
  `controller.server.state_json` shows this state, and it leaves them out.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

from protocol.records.metadata import (
    AccessControlEntryRecord,
    ClientQuotaRecord,
    ConfigRecord,
    DelegationTokenRecord,
    FeatureLevelRecord,
    ProducerIdsRecord,
    RegisterControllerRecord,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
    ZkMigrationStateRecord,
)

from .cluster import ReplayError

#: Kafka's ConfigResource.Type.TOPIC
TOPIC_RESOURCE = 2
#: the feature whose level is the metadata version (Kafka's MetadataVersion.FEATURE_NAME)
METADATA_VERSION = "metadata.version"

#: (resource type, resource name)
ConfigResource = tuple[int, str]
#: a client quota entity: its (entity type, entity name or None for the default) parts, by type
QuotaEntity = tuple[tuple[str, str | None], ...]
#: a SCRAM credential's key: (user name, mechanism)
ScramKey = tuple[str, int]


class ProducerIdBlock(NamedTuple):
    """The latest ProducerIdsRecord: the block last handed out, to whom, and where the next starts."""

    broker_id: int
    broker_epoch: int
    next_producer_id: int


@dataclass(frozen=True, slots=True)
class FrozenKept:
    """A frozen copy of `KeptState` (its dicts are private copies, never mutated)."""

    configs: dict[ConfigResource, dict[str, str]]
    features: dict[str, int]
    acls: dict[uuid.UUID, AccessControlEntryRecord]
    quotas: dict[QuotaEntity, dict[str, float]]
    scram: dict[ScramKey, UserScramCredentialRecord]
    tokens: dict[str, DelegationTokenRecord]
    producer_ids: ProducerIdBlock | None
    controllers: dict[int, RegisterControllerRecord]
    #: None until a ZkMigrationStateRecord is replayed
    zk_migration_state: int | None


def quota_entity(record: ClientQuotaRecord) -> QuotaEntity:
    return tuple(sorted((part.entity_type, part.entity_name) for part in record.entity))


@dataclass
class KeptState:
    configs: dict[ConfigResource, dict[str, str]] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)
    acls: dict[uuid.UUID, AccessControlEntryRecord] = field(default_factory=dict)
    quotas: dict[QuotaEntity, dict[str, float]] = field(default_factory=dict)
    scram: dict[ScramKey, UserScramCredentialRecord] = field(default_factory=dict)
    tokens: dict[str, DelegationTokenRecord] = field(default_factory=dict)
    producer_ids: ProducerIdBlock | None = None
    controllers: dict[int, RegisterControllerRecord] = field(default_factory=dict)
    zk_migration_state: int | None = None
    #: the last frozen copy, dropped by every replay (see the module's rules)
    _frozen: FrozenKept | None = field(default=None, compare=False, repr=False)

    def frozen(self) -> FrozenKept:
        """A frozen copy: the one kept from the last call if no replay changed anything since."""
        frozen = self._frozen
        if frozen is None:
            frozen = self._frozen = FrozenKept(
                configs=dict(self.configs),
                features=dict(self.features),
                acls=dict(self.acls),
                quotas=dict(self.quotas),
                scram=dict(self.scram),
                tokens=dict(self.tokens),
                producer_ids=self.producer_ids,
                controllers=dict(self.controllers),
                zk_migration_state=self.zk_migration_state,
            )
        return frozen

    # ------------------------------------------------------------------ replay
    def replay_config(self, record: ConfigRecord) -> None:
        self._frozen = None
        _set_or_drop(self.configs, (record.resource_type, record.resource_name), record.name, record.value)

    def drop_topic_configs(self, topic_name: str) -> None:
        """A topic was removed: its configs go with it (as Kafka's ReplicationControlManager does)."""
        if self.configs.pop((TOPIC_RESOURCE, topic_name), None) is not None:
            self._frozen = None

    def replay_feature(self, record: FeatureLevelRecord) -> None:
        if record.feature_level == 0:
            if record.name == METADATA_VERSION:
                raise ReplayError("metadata.version has no feature level 0")
            self._frozen = None
            self.features.pop(record.name, None)
        else:
            self._frozen = None
            self.features[record.name] = record.feature_level

    def replay_acl(self, record: AccessControlEntryRecord) -> None:
        self._frozen = None
        self.acls[record.id] = record

    def replay_remove_acl(self, record: RemoveAccessControlEntryRecord) -> None:
        if self.acls.pop(record.id, None) is None:
            raise ReplayError(f"removal of unknown ACL {record.id}")
        self._frozen = None

    def replay_quota(self, record: ClientQuotaRecord) -> None:
        self._frozen = None
        _set_or_drop(self.quotas, quota_entity(record), record.key, None if record.remove else record.value)

    def replay_scram(self, record: UserScramCredentialRecord) -> None:
        self._frozen = None
        self.scram[(record.name, record.mechanism)] = record

    def replay_remove_scram(self, record: RemoveUserScramCredentialRecord) -> None:
        if self.scram.pop((record.name, record.mechanism), None) is None:
            raise ReplayError(f"removal of unknown SCRAM credential of {record.name!r} (mechanism {record.mechanism})")
        self._frozen = None

    def replay_token(self, record: DelegationTokenRecord) -> None:
        self._frozen = None
        self.tokens[record.token_id] = record

    def replay_remove_token(self, record: RemoveDelegationTokenRecord) -> None:
        if self.tokens.pop(record.token_id, None) is not None:
            self._frozen = None

    def replay_producer_ids(self, record: ProducerIdsRecord) -> None:
        current = 0 if self.producer_ids is None else self.producer_ids.next_producer_id
        if record.next_producer_id <= current:
            raise ReplayError(
                f"next producer id {record.next_producer_id} is not greater than the current one, {current}"
            )
        self._frozen = None
        self.producer_ids = ProducerIdBlock(record.broker_id, record.broker_epoch, record.next_producer_id)

    def replay_controller(self, record: RegisterControllerRecord) -> None:
        self._frozen = None
        self.controllers[record.controller_id] = record

    def replay_zk_migration(self, record: ZkMigrationStateRecord) -> None:
        self._frozen = None
        self.zk_migration_state = record.zk_migration_state


Outer = TypeVar("Outer")
Value = TypeVar("Value")


def _set_or_drop(table: dict[Outer, dict[str, Value]], outer: Outer, key: str, value: Value | None) -> None:
    """`table[outer][key] = value`, or the key's removal when `value` is None (a config's null value,
    a quota's remove). The inner mapping is replaced, never edited (a frozen copy may share it), and
    an outer key left with nothing is forgotten."""
    inner = dict(table.get(outer, {}))
    if value is None:
        inner.pop(key, None)
    else:
        inner[key] = value
    if inner:
        table[outer] = inner
    else:
        table.pop(outer, None)
