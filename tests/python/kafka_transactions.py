"""Kafka transactions with kafka-python (a second client family).

A transactional producer commits, aborts and commits again; a
read_committed consumer gets the committed records only and its position
moves past the aborted record and the markers; a read_uncommitted one gets
every record. QUEEN_KAFKA names the broker. Exits non-zero on a mismatch.
"""

import os
import sys

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic


def check(condition, message):
    if not condition:
        print(f"FAILED: {message}", file=sys.stderr)
        sys.exit(1)


kafka = os.environ["QUEEN_KAFKA"]
KafkaAdminClient(bootstrap_servers=kafka).create_topics([NewTopic("kp-txn", 1, 1)])
tp = TopicPartition("kp-txn", 0)

producer = KafkaProducer(bootstrap_servers=kafka, transactional_id="kp-app")
producer.init_transactions()
producer.begin_transaction()
producer.send("kp-txn", b"c1", partition=0)
producer.send("kp-txn", b"c2", partition=0)
producer.commit_transaction()
producer.begin_transaction()
producer.send("kp-txn", b"a1", partition=0)
producer.flush()
producer.abort_transaction()
producer.begin_transaction()
producer.send("kp-txn", b"c3", partition=0)
producer.commit_transaction()
producer.close()

# c1 c2 commit a1 abort c3 commit: the end is offset 7.
def read(isolation):
    consumer = KafkaConsumer(
        bootstrap_servers=kafka,
        auto_offset_reset="earliest",
        consumer_timeout_ms=3000,
        isolation_level=isolation,
    )
    consumer.assign([tp])
    values = [m.value for m in consumer]
    position = consumer.position(tp)
    consumer.close()
    return values, position


values, position = read("read_committed")
check(values == [b"c1", b"c2", b"c3"], f"read_committed got {values}")
check(position == 7, f"read_committed position {position}")
values, position = read("read_uncommitted")
check(values == [b"c1", b"c2", b"a1", b"c3"], f"read_uncommitted got {values}")
check(position == 7, f"read_uncommitted position {position}")
print("ok: kafka-python committed and aborted; read_committed saw the committed records")
