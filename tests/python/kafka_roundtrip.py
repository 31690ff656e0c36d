"""Drives the Kafka facade with kafka-python (a second client family).

Creates a topic, produces with gzip, consumes it back byte for byte, and
fetches a message pushed over HTTP at the offset the push answered.
QUEEN_KAFKA and QUEEN_URL name the broker. Exits non-zero on a mismatch.
"""

import json
import os
import sys
import urllib.request

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic


def check(condition, message):
    if not condition:
        print(f"FAILED: {message}", file=sys.stderr)
        sys.exit(1)


kafka = os.environ["QUEEN_KAFKA"]
http = os.environ["QUEEN_URL"]

admin = KafkaAdminClient(bootstrap_servers=kafka)
admin.create_topics([NewTopic("kp-orders", 2, 1)])
check("kp-orders" in admin.list_topics(), "the topic is listed")

# kafka-python 3 enables idempotence by default: InitProducerId and sequences.
producer = KafkaProducer(bootstrap_servers=kafka, compression_type="gzip", acks="all")
sent = []
for i in range(10):
    md = producer.send(
        "kp-orders", key=b"k%d" % i, value=b"v%d" % i, partition=i % 2, headers=[("h", b"\x00\xff"), ("h", b"2")]
    ).get(timeout=20)
    sent.append((md.partition, md.offset, b"k%d" % i, b"v%d" % i))
check([s[1] for s in sent if s[0] == 0] == [0, 1, 2, 3, 4], f"gapless offsets: {sent}")

consumer = KafkaConsumer(bootstrap_servers=kafka, auto_offset_reset="earliest", consumer_timeout_ms=3000)
consumer.assign([TopicPartition("kp-orders", 0), TopicPartition("kp-orders", 1)])
got = sorted((m.partition, m.offset, m.key, m.value) for m in consumer)
check(got == sorted(sent), f"consumed {got}")

# A message pushed over HTTP is fetched over Kafka at the offset the push answered.
request = urllib.request.Request(
    f"{http}/api/v1/push",
    data=json.dumps({"items": [{"queue": "kp-native", "payload": {"a": 1}, "transactionId": "t-1"}]}).encode(),
    headers={"Content-Type": "application/json"},
)
pushed = json.load(urllib.request.urlopen(request))
consumer = KafkaConsumer(bootstrap_servers=kafka, auto_offset_reset="earliest", consumer_timeout_ms=3000)
consumer.assign([TopicPartition("kp-native", 0)])
messages = list(consumer)
check(len(messages) == 1, f"one native message: {messages}")
m = messages[0]
check(m.offset == pushed[0]["offset"], "same offset")
check(json.loads(m.value) == {"a": 1}, f"value is the JSON data: {m.value!r}")
check(dict(m.headers).get("queen-transaction-id") == b"t-1", f"headers {m.headers}")
print("ok: kafka-python created, produced, consumed and fetched a native message")
