"""kafka-python across DeleteRecords: the admin client moves the low
watermark, a consumer positioned below it is reset to it, and a consumer
group starts there. QUEEN_KAFKA names the broker."""

import os

from common import check
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import OffsetOutOfRangeError

kafka = os.environ["QUEEN_KAFKA"]
tp = TopicPartition("kp-deleted", 0)

admin = KafkaAdminClient(bootstrap_servers=kafka)
admin.create_topics([NewTopic("kp-deleted", 1, 1)])
producer = KafkaProducer(bootstrap_servers=kafka, acks="all")
for i in range(10):
    producer.send("kp-deleted", value=b"v%d" % i, partition=0).get(timeout=20)

answer = admin.delete_records({tp: 6})
check(answer[tp]["low_watermark"] == 6, f"the low watermark moved: {answer}")
try:
    admin.delete_records({tp: 11})
    check(False, "deleting past the high watermark was accepted")
except OffsetOutOfRangeError:
    pass

consumer = KafkaConsumer(bootstrap_servers=kafka, auto_offset_reset="earliest", consumer_timeout_ms=5000)
consumer.assign([tp])
check(consumer.beginning_offsets([tp])[tp] == 6, "ListOffsets earliest is the new start")
consumer.seek(tp, 2)
first = next(iter(consumer))
check(first.offset == 6 and first.value == b"v6", f"reset to the start: {first}")
consumer.close()

group = KafkaConsumer(
    "kp-deleted", bootstrap_servers=kafka, group_id="kp-del-group", auto_offset_reset="earliest", consumer_timeout_ms=10000
)
offsets = []
for m in group:
    offsets.append(m.offset)
    if m.offset == 9:
        break
check(offsets == [6, 7, 8, 9], f"the group reads from the start: {offsets}")
group.close()
print("ok: kafka-python followed DeleteRecords")
