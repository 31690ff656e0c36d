"""kafka-python's admin calls about where partitions live: DescribeLogDirs
(one log directory, each partition's stored size), ElectLeaders (one
replica per partition: never an election to hold), and the partition
reassignment APIs (none possible, none in progress), as Kafka answers a
single-broker cluster. QUEEN_KAFKA names the broker."""

import os

from common import check
from kafka import KafkaAdminClient, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import (
    InvalidReplicationAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)

kafka = os.environ["QUEEN_KAFKA"]
topic = "kp-placed"
payload = b"x" * 1000

admin = KafkaAdminClient(bootstrap_servers=kafka)
admin.create_topics([NewTopic(topic, 2, 1)])
producer = KafkaProducer(bootstrap_servers=kafka, acks="all")
for _ in range(20):
    producer.send(topic, value=payload, partition=0).get(timeout=20)
producer.close()

# DescribeLogDirs: every partition, then only the ones asked for.
(broker,) = admin.describe_log_dirs()
(log_dir,) = broker["log_dirs"]
check(log_dir["error_code"] == 0, f"the log dir is readable: {log_dir}")
sizes = {
    (t["name"], p["partition_index"]): p["partition_size"]
    for t in log_dir["topics"]
    for p in t["partitions"]
}
check(sizes.get((topic, 0), 0) >= 20 * len(payload), f"partition 0 holds the records: {sizes}")
check(sizes.get((topic, 1)) == 0, f"partition 1 is empty: {sizes}")
(broker,) = admin.describe_log_dirs({topic: [1], "kp-nothing": [0]})
asked = [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in broker["log_dirs"][0]["topics"]]
check(asked == [(topic, [1])], f"only the partitions asked for, unknown ones left out: {asked}")

# ElectLeaders: the one replica already leads, for either election type.
for election_type in (0, 1):
    answer = admin.elect_leaders(election_type, {topic: [0, 1]}, raise_errors=False)
    codes = [p.error_code for r in answer.replica_election_results for p in r.partition_result]
    check(codes == [84, 84], f"ELECTION_NOT_NEEDED for type {election_type}: {answer}")
admin.elect_leaders(0, {topic: [0, 1]})  # kafka-python ignores ELECTION_NOT_NEEDED
try:
    admin.elect_leaders(0, {topic: [7]})
    check(False, "an election on a missing partition was accepted")
except UnknownTopicOrPartitionError:
    pass
# kafka-python names every partition of every topic for "all" (never the
# null list): each one needs no election.
everything = admin.elect_leaders(0, None, raise_errors=False)
codes = {p.error_code for r in everything.replica_election_results for p in r.partition_result}
check(codes == {84}, f"no partition needs an election: {everything}")

# Partition reassignments: none in progress, the current replica set is
# accepted, anything else refused.
check(admin.list_partition_reassignments() == {}, "no reassignment in progress")
check(admin.list_partition_reassignments({topic: [0, 1]}) == {}, "none for the topic either")
tp = TopicPartition(topic, 0)
partitions = admin.describe_topics([topic])[0]["partitions"]
(leader,) = [p["replica_nodes"] for p in partitions if p["partition_index"] == 0][0]
answer = admin.alter_partition_reassignments({tp: [leader]})
check(answer == {tp: None}, f"a reassignment to the current replica is accepted: {answer}")
answer = admin.alter_partition_reassignments({tp: None})
check(answer == {tp: NoReassignmentInProgressError}, f"nothing to cancel: {answer}")
answer = admin.alter_partition_reassignments({tp: [leader + 1000]})
check(answer == {tp: InvalidReplicationAssignmentError}, f"an unknown broker is refused: {answer}")
missing = TopicPartition(topic, 9)
answer = admin.alter_partition_reassignments({missing: [leader]})
check(answer == {missing: UnknownTopicOrPartitionError}, f"a missing partition: {answer}")
admin.close()
print("ok: kafka-python's partition admin calls")
