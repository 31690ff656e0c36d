"""The last step of a cut-over off Kafka: a queen-mq consumer in the group
its Kafka consumers used continues where they committed.

QUEEN_URL names the broker, QUEEN_QUEUE the topic, QUEEN_GROUP the group,
QUEEN_FROM its committed offsets (a JSON object, Kafka partition index ->
offset) and QUEEN_EXPECT the numbers (a JSON list) produced since. The pops
must return exactly those, each partition's first at its committed offset
and in order; the acks then move the group on. Exits non-zero on a
mismatch."""

import asyncio
import json
import os

from common import check
from queen import Queen


async def main():
    url = os.environ["QUEEN_URL"]
    queue = os.environ["QUEEN_QUEUE"]
    group = os.environ["QUEEN_GROUP"]
    start = json.loads(os.environ["QUEEN_FROM"])
    expected = json.loads(os.environ["QUEEN_EXPECT"])
    got = {}
    async with Queen(url) as client:
        # A pop leases the partitions it claims: pop until both gave theirs.
        for _ in range(8):
            messages = await client.queue(queue).group(group).batch(100).partitions(2).wait(False).pop()
            if not messages:
                continue
            for m in messages:
                got.setdefault(m["partition"], []).append((m["offset"], m["data"]))
            ack = await client.ack(messages, True, {"group": group})
            check(ack.get("success", True) is not False, f"ack: {ack}")
            if sum(len(v) for v in got.values()) >= len(expected):
                break
        left = await client.queue(queue).group(group).batch(100).partitions(2).wait(False).pop()
        check(left == [], f"nothing more for {group} after the acks: {left}")
    numbers = sorted(n for records in got.values() for _, n in records)
    check(numbers == sorted(expected), f"every new record once: {numbers} != {expected}")
    for partition, records in got.items():
        offsets = [o for o, _ in records]
        check(offsets[0] == start[partition],
              f"partition {partition} continues at the group's commit {start[partition]}: {offsets}")
        check(offsets == sorted(offsets), f"partition {partition} in order: {offsets}")
    print(f"ok: {group} continued at {start} with {len(numbers)} records")


asyncio.run(main())
