"""Topic configs through confluent-kafka's AdminClient (librdkafka underneath).

Creates a topic with configs, describes them back with their sources,
changes them with incremental_alter_configs (SET, DELETE, APPEND, SUBTRACT,
validate-only) and alter_configs, checks that bad input is refused with
Kafka's error codes and changes nothing, and that the native HTTP API sees
the same options. QUEEN_KAFKA and QUEEN_URL name the broker. Exits non-zero
on a mismatch.
"""

import json
import os
import sys
import urllib.request

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)


def check(condition, message):
    if not condition:
        print(f"FAILED: {message}", file=sys.stderr)
        sys.exit(1)


kafka = os.environ["QUEEN_KAFKA"]
http = os.environ["QUEEN_URL"]
admin = AdminClient({"bootstrap.servers": kafka, "broker.address.family": "v4"})
TOPIC = "cf-configs"


def topic():
    return ConfigResource(ConfigResource.Type.TOPIC, TOPIC)


def describe():
    resource = topic()
    return admin.describe_configs([resource])[resource].result(timeout=20)


def values():
    return {name: entry.value for name, entry in describe().items()}


def source(entry):
    return getattr(entry.source, "value", entry.source)


def incremental(*ops, validate_only=False, name=TOPIC):
    resource = ConfigResource(ConfigResource.Type.TOPIC, name)
    for config, op, value in ops:
        resource.add_incremental_config(ConfigEntry(config, value, incremental_operation=op))
    return admin.incremental_alter_configs([resource], validate_only=validate_only)[resource]


def refused(future, code, what):
    try:
        future.result(timeout=20)
    except KafkaException as e:
        error = e.args[0]
        check(error.code() == code, f"{what}: expected {code}, got {error}")
        return error
    check(False, f"{what}: accepted")


def queue_options():
    with urllib.request.urlopen(f"{http}/api/v1/resources/queues/{TOPIC}") as answer:
        return json.load(answer)["options"]


created = admin.create_topics(
    [NewTopic(TOPIC, num_partitions=1, replication_factor=1,
              config={"retention.ms": "86400123", "cleanup.policy": "delete"})]
)
created[TOPIC].result(timeout=20)

# Described back exactly, with sources and synonyms.
configs = describe()
retention = configs["retention.ms"]
check(retention.value == "86400123", f"retention.ms {retention.value}")
check(source(retention) == ConfigSource.DYNAMIC_TOPIC_CONFIG.value, f"source {retention.source}")
check(not retention.is_default, "retention.ms is set on the topic")
check("log.retention.ms" in retention.synonyms, f"synonyms {retention.synonyms}")
check(configs["min.insync.replicas"].is_default, "min.insync.replicas is a default")
check(source(configs["min.insync.replicas"]) == ConfigSource.DEFAULT_CONFIG.value, "default source")
check(configs["queen.dedupWindowSeconds"].value == "0", "a Kafka topic has no dedup window")
options = queue_options()
check(options["retentionSeconds"] == 86401 and options["retentionEnabled"], f"native {options}")

# SET and APPEND, then the native door sees them.
incremental(
    ("retention.ms", AlterConfigOpType.SET, "3000"),
    ("cleanup.policy", AlterConfigOpType.APPEND, "compact"),
    ("queen.leaseTime", AlterConfigOpType.SET, "77"),
).result(timeout=20)
now = values()
check(now["retention.ms"] == "3000", f"SET: {now['retention.ms']}")
check(now["cleanup.policy"] == "delete,compact", f"APPEND: {now['cleanup.policy']}")
options = queue_options()
check(options["retentionSeconds"] == 3 and options["leaseTime"] == 77, f"native {options}")
check(options["topicConfigs"]["cleanup.policy"] == "delete,compact", f"native {options}")

# SUBTRACT and DELETE.
incremental(
    ("cleanup.policy", AlterConfigOpType.SUBTRACT, "delete"),
    ("retention.ms", AlterConfigOpType.DELETE, None),
).result(timeout=20)
configs = describe()
check(configs["cleanup.policy"].value == "compact", f"SUBTRACT: {configs['cleanup.policy'].value}")
check(configs["retention.ms"].value == "-1" and configs["retention.ms"].is_default, "DELETE")
check(not queue_options()["retentionEnabled"], "retention is off natively")

# validate-only and bad input change nothing.
before = values()
incremental(("retention.ms", AlterConfigOpType.SET, "99999"), validate_only=True).result(timeout=20)
refused(incremental(("no.such.config", AlterConfigOpType.SET, "1")),
        KafkaError.INVALID_CONFIG, "unknown name")
refused(incremental(("retention.ms", AlterConfigOpType.SET, "abc")),
        KafkaError.INVALID_CONFIG, "non-integer")
refused(incremental(("retention.ms", AlterConfigOpType.APPEND, "5")),
        KafkaError.INVALID_CONFIG, "APPEND on a non-list")
refused(incremental(("cleanup.policy", AlterConfigOpType.SET, "shred")),
        KafkaError.INVALID_CONFIG, "bad cleanup.policy")
refused(incremental(("queen.leaseTime", AlterConfigOpType.SET, "-1")),
        KafkaError.INVALID_CONFIG, "negative lease")
# One bad change in a request: the good one is not applied either.
refused(incremental(("retention.ms", AlterConfigOpType.SET, "5000"),
                    ("max.message.bytes", AlterConfigOpType.SET, "huge")),
        KafkaError.INVALID_CONFIG, "mixed request")
check(values() == before, "nothing changed")
refused(incremental(("retention.ms", AlterConfigOpType.SET, "1"), name="cf-missing"),
        KafkaError.UNKNOWN_TOPIC_OR_PART, "unknown topic")

# alter_configs replaces the whole set.
resource = ConfigResource(ConfigResource.Type.TOPIC, TOPIC, set_config={"max.message.bytes": "4096"})
admin.alter_configs([resource])[resource].result(timeout=20)
configs = describe()
check(configs["max.message.bytes"].value == "4096", "alter_configs set")
check(configs["cleanup.policy"].value == "delete" and configs["cleanup.policy"].is_default,
      f"alter_configs reset cleanup.policy: {configs['cleanup.policy'].value}")
check(queue_options()["leaseTime"] == 77, "queen options not given are kept")
print("ok: confluent-kafka described, altered incrementally and replaced the topic configs")
