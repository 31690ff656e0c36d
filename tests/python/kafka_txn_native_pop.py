"""The native door over a topic written by a Kafka transactional producer:
queen-mq pops exactly the committed records, in order, and nothing of an
aborted transaction, of an open one, or the markers.

QUEEN_URL names the broker, QUEEN_QUEUE the topic, QUEEN_EXPECT the values
(a JSON list) the pops must return, in order. Each popped batch is acked,
so a second run continues where the first stopped. Exits non-zero on a
mismatch."""

import asyncio
import json
import os

from common import check
from queen import Queen


async def main():
    url = os.environ["QUEEN_URL"]
    queue = os.environ["QUEEN_QUEUE"]
    expected = json.loads(os.environ["QUEEN_EXPECT"])
    got = []
    async with Queen(url) as client:
        # Small batches: aborted records and markers lie between them.
        while True:
            messages = await client.queue(queue).batch(2).wait(False).pop()
            if not messages:
                break
            got.extend(m["data"]["v"] for m in messages)
            ack = await client.ack(messages, True)
            check(ack.get("success", True) is not False, f"ack: {ack}")
            check(len(got) <= len(expected) + 10, f"runaway: {got}")
        # Nothing more is visible: an open transaction holds the rest back.
        left = await client.queue(queue).batch(10).wait(False).pop()
        check(left == [], f"nothing past the last stable offset: {left}")
    check(got == expected, f"committed records only, in order: {got} != {expected}")
    print(f"ok: popped {got}")


asyncio.run(main())
