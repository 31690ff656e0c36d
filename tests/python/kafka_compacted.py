"""kafka-python across a compacted topic: ten rounds over ten keys, then a
consumer from the beginning reads only the latest record of each key, at
its original offset, across the gaps. QUEEN_KAFKA names the broker."""

import os
import time

from common import check
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

kafka = os.environ["QUEEN_KAFKA"]
tp = TopicPartition("kp-compacted", 0)

admin = KafkaAdminClient(bootstrap_servers=kafka)
admin.create_topics([NewTopic("kp-compacted", 1, 1, topic_configs={"cleanup.policy": "compact"})])
producer = KafkaProducer(bootstrap_servers=kafka, acks="all", linger_ms=20)
futures = [
    producer.send("kp-compacted", key=b"k%d" % (i % 10), value=b"r%d" % (i // 10), partition=0) for i in range(100)
]
producer.flush()
check([f.get(timeout=20).offset for f in futures] == list(range(100)), "gapless offsets on produce")


def read_all():
    consumer = KafkaConsumer(bootstrap_servers=kafka, auto_offset_reset="earliest", consumer_timeout_ms=3000)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    out = []
    for m in consumer:
        out.append((m.offset, m.key, m.value))
        if m.offset == 99:
            break
    consumer.close()
    return out


deadline = time.monotonic() + 20
while True:
    records = read_all()
    if len(records) == 10:
        break
    check(time.monotonic() < deadline, f"never compacted: {len(records)} records")
    time.sleep(0.5)
expected = [(o, b"k%d" % (o % 10), b"r9") for o in range(90, 100)]
check(records == expected, f"the latest record per key at its offset: {records}")
print("ok: kafka-python read a compacted topic across its gaps")
