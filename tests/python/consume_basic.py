"""Push, then consume with a handler that returns normally (the client acks
after it), in order; then measure how fast a waiting pop is woken by a push.
QUEEN_URL names the broker."""

import asyncio
import os
import time

from common import as_list, check
from queen import Queen


async def main():
    url = os.environ["QUEEN_URL"]
    async with Queen(url) as client:
        await client.queue("py-basic").create()
        await client.queue("py-basic").push([{"transactionId": f"b-{n:03}", "data": {"n": n}} for n in range(30)])

        received = []

        async def handler(messages):
            for m in as_list(messages):
                check(m["deliveryAttempt"] == 1, f"first delivery: {m}")
                check(isinstance(m["partitionId"], str), "partitionId is a string")
                received.append(m["data"]["n"])

        await client.queue("py-basic").batch(7).limit(30).timeout_millis(1000).idle_millis(3000).consume(handler)
        check(received == list(range(30)), f"every message once, in order: {received}")

        # Everything was acked: nothing is left for the queue-mode group.
        left = await client.queue("py-basic").batch(10).wait(False).pop()
        check(left == [], f"nothing left after the acks: {left}")
        depth = await client.admin.get_queue("py-basic")
        check(depth["totals"]["completed"] == 30 and depth["totals"]["pending"] == 0, f"depth: {depth['totals']}")

        # Long polling: a waiting pop returns soon after a push, not at its timeout.
        pushed_at = {}

        async def push_later():
            await asyncio.sleep(0.5)
            await client.queue("py-wait").push([{"transactionId": "w-1", "data": {"w": 1}}])
            pushed_at["t"] = time.monotonic()

        await client.queue("py-wait").create()
        pusher = asyncio.create_task(push_later())
        started = time.monotonic()
        got = await client.queue("py-wait").batch(1).wait(True).timeout_millis(10000).pop()
        returned = time.monotonic()
        await pusher
        check(len(got) == 1 and got[0]["transactionId"] == "w-1", f"long poll got {got}")
        latency_ms = (returned - pushed_at.get("t", returned)) * 1000
        # The push answer and the pop answer race; measure from the earlier.
        latency_ms = max(latency_ms, (returned - started) * 1000 - 500)
        print(f"long-poll wake-up latency: {latency_ms:.1f} ms")
        check(latency_ms < 1000, f"woken within a second of the push ({latency_ms:.0f} ms)")
        ack = await client.ack(got[0], True)
        check(ack.get("success") is True, f"ack: {ack}")
    print("ok: consumed in order, acked, long poll woken promptly")


asyncio.run(main())
