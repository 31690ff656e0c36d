"""Kafka ACLs through kafka-python over SASL_PLAINTEXT (PLAIN): the admin
(a super user) creates, describes and deletes ACLs with KafkaAdminClient;
what it grants lets a user produce, what it deletes stops it, and a user
without ALTER on the cluster cannot manage ACLs.

Environment: QUEEN_KAFKA_SASL_PLAINTEXT (listener address), QUEEN_ADMIN,
QUEEN_USER and QUEEN_OTHER as NAME:PASSWORD. Exits non-zero with the reason
on failure.
"""

import os
import time

from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import KafkaError

from common import check

ADDRESS = os.environ["QUEEN_KAFKA_SASL_PLAINTEXT"]
TOPIC = "py-acl-topic"


def account(variable):
    name, password = os.environ[variable].split(":", 1)
    return name, password


def secured(who):
    name, password = who
    return dict(
        bootstrap_servers=ADDRESS,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username=name,
        sasl_plain_password=password,
    )


ADMIN, USER, OTHER = account("QUEEN_ADMIN"), account("QUEEN_USER"), account("QUEEN_OTHER")
principal = f"User:{USER[0]}"


def produce(who, value):
    """Whether `who` could produce `value` (kafka-python surfaces the
    topic refusal as an error of the send, or of the metadata wait)."""
    producer = KafkaProducer(acks="all", max_block_ms=5000, retries=0, **secured(who))
    try:
        producer.send(TOPIC, value.encode()).get(timeout=10)
        return True
    except KafkaError as e:
        print(f"kafka-python: produce as {who[0]} refused: {type(e).__name__}")
        return False
    finally:
        producer.close(timeout=5)


admin = KafkaAdminClient(**secured(ADMIN))
admin.create_topics([NewTopic(TOPIC, 1, 1)])
check(not produce(USER, "before"), "nothing is allowed before an ACL grants it")

write = ACL(
    principal=principal,
    host="*",
    operation=ACLOperation.WRITE,
    permission_type=ACLPermissionType.ALLOW,
    resource_pattern=ResourcePattern(ResourceType.TOPIC, "py-acl-", ACLResourcePatternType.PREFIXED),
)
idempotent = ACL(
    principal=principal,
    host="*",
    operation=ACLOperation.IDEMPOTENT_WRITE,
    permission_type=ACLPermissionType.ALLOW,
    resource_pattern=ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", ACLResourcePatternType.LITERAL),
)
created = admin.create_acls([write, idempotent])
check(not created["failed"], f"create_acls failed: {created['failed']}")
check(len(created["succeeded"]) == 2, f"create_acls: {created}")

mine = ACLFilter(
    principal=principal,
    host="*",
    operation=ACLOperation.ANY,
    permission_type=ACLPermissionType.ANY,
    resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
)
described, error = admin.describe_acls(mine)
check(error.errno == 0, f"describe_acls: {error}")
check(
    sorted((a.operation, a.resource_pattern.resource_type) for a in described)
    == sorted([(ACLOperation.WRITE, ResourceType.TOPIC), (ACLOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER)]),
    f"describe_acls answered {described}",
)
matching = ACLFilter(
    principal=None,
    host=None,
    operation=ACLOperation.ANY,
    permission_type=ACLPermissionType.ANY,
    resource_pattern=ResourcePatternFilter(ResourceType.TOPIC, TOPIC, ACLResourcePatternType.MATCH),
)
applying, error = admin.describe_acls(matching)
check([a.resource_pattern.resource_name for a in applying] == ["py-acl-"], f"MATCH found {applying}")
print(f"kafka-python: create_acls and describe_acls round-trip ({len(described)} ACLs)")

check(produce(USER, "granted"), "the ACL lets the user produce")

# Without ALTER on the cluster, another user cannot manage ACLs.
other = KafkaAdminClient(**secured(OTHER))
try:
    refused = other.create_acls([write])
    check(refused["failed"] and not refused["succeeded"], f"create_acls by {OTHER[0]}: {refused}")
except KafkaError as e:
    print(f"kafka-python: create_acls by {OTHER[0]} refused: {type(e).__name__}")
try:
    _, error = other.describe_acls(mine)
    check(error.errno != 0, "describe_acls without DESCRIBE on the cluster answered")
except KafkaError as e:
    print(f"kafka-python: describe_acls by {OTHER[0]} refused: {type(e).__name__}")
other.close()

deleted = admin.delete_acls([mine])
(_, gone, failure), = deleted
check(failure.errno == 0, f"delete_acls: {failure}")
check(len(gone) == 2, f"delete_acls deleted {gone}")
described, _ = admin.describe_acls(mine)
check(described == [], f"after delete_acls: {described}")
# The broker that took the change decides by it at once.
time.sleep(0.1)
check(not produce(USER, "revoked"), "the deleted ACL no longer lets the user produce")
print("kafka-python: delete_acls revoked the grant")
admin.close()
