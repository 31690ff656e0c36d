"""The migration path with kafka-python: group g (a subscribed consumer
group) consumes half a topic over Kafka and commits; the HTTP API pops with
consumer group g and receives exactly the second half; its acks move what
Kafka's OffsetFetch answers, and the next Kafka subscriber of g continues
after them.
QUEEN_KAFKA and QUEEN_URL name the broker. Exits non-zero on a mismatch.
"""

import json
import os
import sys
import time
import urllib.request

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata


def check(condition, message):
    if not condition:
        print(f"FAILED: {message}", file=sys.stderr)
        sys.exit(1)


def http(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(os.environ["QUEEN_URL"] + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as answer:
        text = answer.read()
        return json.loads(text) if text else None


kafka = os.environ["QUEEN_KAFKA"]
tp = TopicPartition("migrate", 0)
producer = KafkaProducer(bootstrap_servers=kafka, acks="all")
for i in range(10):
    producer.send("migrate", value=b"%d" % i, partition=0).get(timeout=20)

consumer = KafkaConsumer(bootstrap_servers=kafka, group_id="g", enable_auto_commit=False,
                         auto_offset_reset="earliest")
consumer.subscribe(["migrate"])
first = []
deadline = time.monotonic() + 30
while len(first) < 5 and time.monotonic() < deadline:
    for records in consumer.poll(timeout_ms=500, max_records=5 - len(first)).values():
        first.extend(r.offset for r in records)
check(first == [0, 1, 2, 3, 4], f"the first half over Kafka: {first}")
consumer.commit({tp: OffsetAndMetadata(5, "kafka", -1)})
check(consumer.committed(tp) == 5, "the commit is stored")
consumer.close()

popped = http("GET", "/api/v1/pop/queue/migrate?batch=100&wait=false&consumerGroup=g")
offsets = [m["offset"] for m in popped["messages"]]
check(offsets == [5, 6, 7, 8, 9], f"HTTP continues at the Kafka commit: {offsets}")
acks = [{"transactionId": m["transactionId"], "partitionId": m["partitionId"], "status": "completed",
         "leaseId": m["leaseId"]} for m in popped["messages"]]
acked = http("POST", "/api/v1/ack/batch", {"acknowledgments": acks, "consumerGroup": "g"})
check(all(a["success"] for a in acked), f"acks: {acked}")

for i in range(10, 13):
    producer.send("migrate", value=b"%d" % i, partition=0).get(timeout=20)
consumer = KafkaConsumer(bootstrap_servers=kafka, group_id="g", enable_auto_commit=False,
                         auto_offset_reset="earliest")
check(consumer.committed(tp) == 10, f"native acks moved the committed offset: {consumer.committed(tp)}")
consumer.subscribe(["migrate"])
rest = []
deadline = time.monotonic() + 30
while len(rest) < 3 and time.monotonic() < deadline:
    for records in consumer.poll(timeout_ms=500).values():
        rest.extend(r.offset for r in records)
for records in consumer.poll(timeout_ms=1000).values():
    rest.extend(r.offset for r in records)
check(rest == [10, 11, 12], f"Kafka continues after the HTTP acks: {rest}")
consumer.close()
print("ok: group g moved from Kafka to HTTP and back")
