"""The queen-mq client on queues with retention: messages older than
retentionSeconds are deleted whether consumed or not, a new group starts at
what is left, and a re-sent id of a deleted message is still a duplicate
(answered with the zero id). QUEEN_URL names the broker."""

import asyncio
import os
import time

from common import check
from queen import Queen

ZERO = "00000000-0000-0000-0000-000000000000"


async def main():
    url = os.environ["QUEEN_URL"]
    async with Queen(url) as client:
        q = client.queue("py-retained")
        created = await q.config({"retention_enabled": True, "retention_seconds": 1}).create()
        check(created["options"]["retentionEnabled"] is True, f"retention applied: {created}")
        old = await q.push([{"transactionId": f"old-{n}", "data": {"n": n}} for n in range(20)])
        check([r["status"] for r in old] == ["queued"] * 20, f"stored: {old}")

        # The broker checks every couple of seconds; wait until the old
        # messages are gone for a new group.
        deadline = time.monotonic() + 20
        for attempt in range(1000):
            group = client.queue("py-retained").group(f"probe-{attempt}")
            left = await group.batch(100).wait(False).pop()
            if not left:
                break
            check(time.monotonic() < deadline, f"old messages never deleted: {len(left)} left")
            await asyncio.sleep(0.5)

        fresh = await q.push([{"transactionId": "new-0", "data": {"n": 100}}])
        check(fresh[0]["offset"] == 20, f"offsets go on: {fresh}")
        got = await client.queue("py-retained").group("late").batch(100).wait(False).pop()
        check([m["transactionId"] for m in got] == ["new-0"], f"a new group reads what is left: {got}")

        again = await q.push([{"transactionId": "old-3", "data": {"n": 3}}])
        check(again[0]["status"] == "duplicate", f"an id outlives its message: {again}")
        check(again[0]["message_id"] == ZERO, f"the deleted original's id is zero: {again}")
    print("ok: queen-mq saw retention delete old messages")


asyncio.run(main())
