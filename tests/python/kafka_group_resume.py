"""A kafka-python consumer group resumes where it committed, and the admin
API sees and manages it: a subscriber consumes exactly 100 of 200 records
on 4 partitions and commits; the next subscriber in the group gets exactly
the other 100. ListGroups, DescribeGroups and OffsetFetch show the group;
an offset reset is refused while a member is active and works once the
group is empty (a new subscriber reads all 200 again); DeleteGroups refuses
an active group with NON_EMPTY_GROUP and deletes the empty one.
QUEEN_KAFKA names the broker. Exits non-zero on a mismatch.
"""

import os
import time

import kafka.errors as Errors
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import MemberToRemove, NewTopic
from kafka.structs import OffsetAndMetadata

from common import check

KAFKA = os.environ["QUEEN_KAFKA"]
TOPIC = "kg-resume"
GROUP = "kg-resume-group"
PARTITIONS = [TopicPartition(TOPIC, p) for p in range(4)]
TOTAL = 200

started = time.monotonic()
admin = KafkaAdminClient(bootstrap_servers=KAFKA, client_id="kg-resume-admin")
admin.create_topics([NewTopic(TOPIC, 4, 1)])

producer = KafkaProducer(bootstrap_servers=KAFKA, acks="all", linger_ms=5)
futures = [producer.send(TOPIC, value=b"%d" % n, partition=n % 4) for n in range(TOTAL)]
producer.flush()
for f in futures:
    f.get(timeout=20)
producer.close()


def subscriber(client_id):
    consumer = KafkaConsumer(
        bootstrap_servers=KAFKA,
        group_id=GROUP,
        client_id=client_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=7,
    )
    consumer.subscribe([TOPIC])
    return consumer


def take(consumer, count, deadline_s=30):
    """Polls until exactly `count` records were returned (never asking for
    more than are still wanted); (partition, offset, number) of each."""
    got = []
    deadline = time.monotonic() + deadline_s
    while len(got) < count and time.monotonic() < deadline:
        batches = consumer.poll(timeout_ms=500, max_records=min(7, count - len(got)))
        for records in batches.values():
            got.extend((r.partition, r.offset, int(r.value)) for r in records)
    check(len(got) == count, f"{consumer.config['client_id']} got {len(got)} of {count} records in {deadline_s} s")
    return got


def nothing_more(consumer, seconds=2):
    """Nothing beyond what was taken arrives."""
    extra = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=300).values():
            extra.extend(int(r.value) for r in records)
    check(not extra, f"{consumer.config['client_id']} received more than expected: {extra}")


def in_partition_order(got, who):
    for p in range(4):
        offsets = [o for (q, o, _) in got if q == p]
        check(offsets == sorted(offsets) and len(set(offsets)) == len(offsets),
              f"{who}: offsets of partition {p} not increasing: {offsets}")
    for (p, o, n) in got:
        check(n % 4 == p and n // 4 == o, f"{who}: record {n} at partition {p} offset {o}")


def committed(group=GROUP):
    return admin.list_group_offsets({group: None}).get(group, {})


def listed_groups():
    return {g["group_id"]: g for g in admin.list_groups()}


# --- the first member consumes exactly half and commits -----------------
first = subscriber("kg-resume-1")
t0 = time.monotonic()
got1 = take(first, TOTAL // 2)
joined_s = time.monotonic() - t0
in_partition_order(got1, "first")
first.commit()
first.close()
numbers1 = [n for (_, _, n) in got1]
check(len(set(numbers1)) == len(numbers1), f"first consumer got duplicates: {sorted(numbers1)}")
stored = {tp.partition: om.offset for tp, om in committed().items()}
consumed_per_partition = {p: len([1 for (q, _, _) in got1 if q == p]) for p in range(4)}
check(stored == {p: c for p, c in consumed_per_partition.items() if c} or
      stored == consumed_per_partition,
      f"committed offsets {stored} are not what the first consumer consumed per partition {consumed_per_partition}")
check(sum(stored.values()) == TOTAL // 2, f"committed offsets after the first half: {stored}")

# --- the second member receives exactly the other half ------------------
second = subscriber("kg-resume-2")
got2 = take(second, TOTAL // 2)
nothing_more(second)
in_partition_order(got2, "second")
numbers2 = [n for (_, _, n) in got2]
check(len(set(numbers2)) == len(numbers2), f"second consumer got duplicates: {sorted(numbers2)}")
check(not set(numbers1) & set(numbers2),
      f"the second consumer received records the first committed: {sorted(set(numbers1) & set(numbers2))}")
check(sorted(numbers1 + numbers2) == list(range(TOTAL)), "the two halves do not make the whole topic")
second.commit()

# --- the admin sees the active group ------------------------------------
groups = listed_groups()
check(GROUP in groups, f"ListGroups lacks the active group: {list(groups)}")
check(groups[GROUP].get("protocol_type") == "consumer", f"listed protocol type: {groups[GROUP]}")
check(groups[GROUP].get("group_state", "Stable") == "Stable", f"listed state: {groups[GROUP]}")
described = admin.describe_groups([GROUP])[GROUP]
check(described["error"] is None, f"DescribeGroups error: {described}")
check(described["group_state"] == "Stable", f"state while a member consumes: {described['group_state']}")
check(described["protocol_type"] == "consumer", f"protocol type: {described['protocol_type']}")
members = described["members"]
check(len(members) == 1, f"one member expected: {members}")
check(members[0]["client_id"] == "kg-resume-2", f"member client id: {members[0]['client_id']}")
assignment = members[0]["member_assignment"]
assigned = sorted(p for t in assignment.get("assigned_partitions", []) for p in t["partitions"]
                  if t["topic"] == TOPIC) if isinstance(assignment, dict) else None
check(assigned == [0, 1, 2, 3], f"the member's described assignment: {assignment!r}")

offsets = committed()
check({tp.partition: om.offset for tp, om in offsets.items() if tp.topic == TOPIC} == {0: 50, 1: 50, 2: 50, 3: 50},
      f"committed offsets after the second half: {offsets}")
check(sum(om.offset for om in offsets.values()) == TOTAL, f"committed offsets sum: {offsets}")

# An offset reset (generation -1, no member id) is refused while a member is active.
refused = admin.alter_group_offsets(GROUP, {tp: OffsetAndMetadata(0, "", None) for tp in PARTITIONS})
check(set(refused) == set(PARTITIONS), f"answer per partition: {refused}")
check(all(e is Errors.UnknownMemberIdError for e in refused.values()),
      f"an offset reset while a member is active must be refused with UNKNOWN_MEMBER_ID: {refused}")
check(sum(om.offset for om in committed().values()) == TOTAL, "the refused reset changed the offsets")

# Deleting the active group is refused, and so are its offsets on a topic it
# subscribes to.
deleted = admin.delete_groups([GROUP])
check(deleted == {GROUP: "NonEmptyGroupError"}, f"deleting an active group: {deleted}")
check(GROUP in listed_groups(), "the refused delete removed the group")
kept = admin.delete_group_offsets(GROUP, [PARTITIONS[0]])
check(kept == {PARTITIONS[0]: Errors.GroupSubscribedToTopicError},
      f"deleting offsets of a subscribed topic: {kept}")

# ListGroups filters by state (v4+).
check(GROUP in {g["group_id"] for g in admin.list_groups(states_filter=["Stable"])},
      "the active group is not listed as Stable")
check(GROUP not in {g["group_id"] for g in admin.list_groups(states_filter=["Empty"])},
      "the active group is listed as Empty")

# An admin removes members in one batched LeaveGroup (v3+): the member, and
# one the group does not know.
removed = admin.remove_group_members(GROUP, [MemberToRemove(member_id=members[0]["member_id"]),
                                             MemberToRemove(member_id="nobody")])
# kafka-python 3.0.12 keys the answer by member id (its docstring says by
# MemberToRemove).
outcome = dict(removed)
check(outcome == {members[0]["member_id"]: Errors.NoError, "nobody": Errors.UnknownMemberIdError},
      f"batched LeaveGroup: {outcome}")
check(admin.describe_groups([GROUP])[GROUP]["group_state"] == "Empty",
      "the group is empty once its only member is removed")

second.close()

# --- reset to earliest while empty; a new subscriber reads everything ---
empty = admin.describe_groups([GROUP])[GROUP]
check(empty["group_state"] == "Empty" and not empty["members"], f"after the last member left: {empty}")
listed = listed_groups()
check(GROUP in listed, f"ListGroups lacks the empty group with offsets: {list(listed)}")
check(listed[GROUP].get("group_state", "Empty") == "Empty", f"listed state of the empty group: {listed[GROUP]}")
reset = admin.alter_group_offsets(GROUP, {tp: OffsetAndMetadata(0, "", None) for tp in PARTITIONS})
check(reset == {tp: Errors.NoError for tp in PARTITIONS}, f"reset of the empty group: {reset}")
check({tp.partition: om.offset for tp, om in committed().items()} == {0: 0, 1: 0, 2: 0, 3: 0},
      f"offsets after the reset: {committed()}")

third = subscriber("kg-resume-3")
got3 = take(third, TOTAL)
nothing_more(third)
in_partition_order(got3, "third")
check(sorted(n for (_, _, n) in got3) == list(range(TOTAL)), "after the reset, not every record once")
third.commit()
third.close()

# --- delete one partition's offsets, then the empty group --------------
gone = admin.delete_group_offsets(GROUP, [PARTITIONS[0]])
check(gone == {PARTITIONS[0]: Errors.NoError}, f"deleting offsets of the empty group: {gone}")
left = {tp.partition: om.offset for tp, om in committed().items()}
check(left == {1: 50, 2: 50, 3: 50}, f"offsets after deleting partition 0's: {left}")
check(GROUP in {g["group_id"] for g in admin.list_groups(states_filter=["Empty"])},
      "the empty group is not listed as Empty")

# --- delete the empty group ---------------------------------------------
deleted = admin.delete_groups([GROUP])
check(deleted == {GROUP: "OK"}, f"deleting the empty group: {deleted}")
check(GROUP not in listed_groups(), f"the deleted group is still listed: {listed_groups().get(GROUP)}")
check(committed() == {}, f"the deleted group still has offsets: {committed()}")
gone = admin.describe_groups([GROUP])[GROUP]
check(gone["group_state"] == "Dead", f"a deleted group is described as {gone['group_state']}")
admin.close()

print(f"first records after {joined_s:.2f} s (initial rebalance delay 3 s); total {time.monotonic() - started:.1f} s")
print("ok: the group resumed at its commit, was described, reset while empty and deleted")
