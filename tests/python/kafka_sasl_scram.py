"""kafka-python over SASL_SSL with SCRAM-SHA-256, and confluent-kafka's
SCRAM admin APIs (AlterUserScramCredentials, DescribeUserScramCredentials).

Environment: QUEEN_KAFKA_SASL_SSL and QUEEN_KAFKA_PLAINTEXT (listener
addresses), QUEEN_CA (the CA file), QUEEN_USER and QUEEN_PASSWORD (a user
with a SCRAM-SHA-256 credential). Exits non-zero with the reason on failure.
"""

import os
import sys

from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from common import check

SASL_SSL = os.environ["QUEEN_KAFKA_SASL_SSL"]
PLAINTEXT = os.environ["QUEEN_KAFKA_PLAINTEXT"]
CA = os.environ["QUEEN_CA"]
USER = os.environ["QUEEN_USER"]
PASSWORD = os.environ["QUEEN_PASSWORD"]
TOPIC = "python-scram"


def secured(user, password):
    return dict(
        bootstrap_servers=SASL_SSL,
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username=user,
        sasl_plain_password=password,
        ssl_cafile=CA,
        ssl_check_hostname=True,
    )


def produce(user, password, values, **extra):
    producer = KafkaProducer(acks="all", **secured(user, password), **extra)
    try:
        for v in values:
            producer.send(TOPIC, v.encode()).get(timeout=20)
    finally:
        producer.close()


def read_all(user, password):
    consumer = KafkaConsumer(enable_auto_commit=False, consumer_timeout_ms=3000, **secured(user, password))
    tp = TopicPartition(TOPIC, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    values = [m.value.decode() for m in consumer]
    consumer.close()
    return values


produce(USER, PASSWORD, ["a", "b"])
check(read_all(USER, PASSWORD) == ["a", "b"], "kafka-python round trip over SASL_SSL/SCRAM-SHA-256")
print("kafka-python: SCRAM-SHA-256 over SASL_SSL produced and consumed 2 records")

try:
    # kafka-python takes the refusal as a failed bootstrap and retries
    # until max_block_ms: keep that short.
    produce(USER, "wrong-password", ["forged"], max_block_ms=5000)
    check(False, "a wrong password was let in")
except Exception as e:  # the client raises its authentication error
    print(f"kafka-python: wrong password refused: {type(e).__name__}: {e}")
check(read_all(USER, PASSWORD) == ["a", "b"], "nothing was written by the refused producer")

# The admin APIs, through confluent-kafka (librdkafka) on the PLAINTEXT listener.
admin = AdminClient({"bootstrap.servers": PLAINTEXT})
upsert = UserScramCredentialUpsertion(
    "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"carol-secret"
)
for user, future in admin.alter_user_scram_credentials([upsert]).items():
    future.result(timeout=20)
described = admin.describe_user_scram_credentials(["carol", USER])
infos = {}
for user, future in described.items():
    description = future.result(timeout=20)
    infos[user] = sorted(
        (str(i.mechanism), i.iterations) for i in description.scram_credential_infos
    )
print(f"described: {infos}")
check(infos["carol"] == [("ScramMechanism.SCRAM_SHA_256", 4096)], f"carol: {infos}")
check(len(infos[USER]) >= 1, f"{USER}: {infos}")
try:
    admin.describe_user_scram_credentials(["nobody"])["nobody"].result(timeout=20)
    check(False, "an unknown user was described")
except Exception as e:
    print(f"unknown user: {e}")
    check("RESOURCE_NOT_FOUND" in str(e) or "does not exist" in str(e), f"unknown user error: {e}")

# The new user authenticates at once, with the password the admin set.
produce("carol", "carol-secret", ["c"])
check(read_all("carol", "carol-secret") == ["a", "b", "c"], "carol's record")
print("carol, made through AlterUserScramCredentials, authenticated")
