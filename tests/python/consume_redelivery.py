"""A consumer killed mid-batch: its messages are redelivered to another
consumer once the lease (2 s) expires, with deliveryAttempt 2.
QUEEN_URL names the broker. With --victim the script is the consumer that
gets killed: it prints the transaction ids it received and hangs."""

import asyncio
import os
import subprocess
import sys
import time

from common import as_list, check
from queen import Queen


async def victim():
    async with Queen(os.environ["QUEEN_URL"]) as client:

        async def handler(messages):
            print(" ".join(m["transactionId"] for m in as_list(messages)), flush=True)
            await asyncio.sleep(3600)  # killed before it ever acks

        await client.queue("py-crash").batch(10).timeout_millis(5000).consume(handler)


async def main():
    url = os.environ["QUEEN_URL"]
    async with Queen(url) as client:
        await client.queue("py-crash").config({"lease_time": 2}).create()
        await client.queue("py-crash").push([{"transactionId": f"k-{n}", "data": {"n": n}} for n in range(10)])

        child = subprocess.Popen(
            [sys.executable, __file__, "--victim"], stdout=subprocess.PIPE, text=True, env=os.environ.copy()
        )
        line = child.stdout.readline().split()
        child.kill()
        child.wait()
        check(line == [f"k-{n}" for n in range(10)], f"the victim held the batch: {line}")
        killed_at = time.monotonic()

        received = []

        async def handler(messages):
            for m in as_list(messages):
                received.append((m["transactionId"], m["deliveryAttempt"]))

        await client.queue("py-crash").batch(10).limit(10).timeout_millis(10000).idle_millis(15000).consume(handler)
        waited = time.monotonic() - killed_at
        check([t for t, _ in received] == [f"k-{n}" for n in range(10)], f"redelivered: {received}")
        check(all(a == 2 for _, a in received), f"second attempt: {received}")
        print(f"redelivered {waited:.2f} s after the kill (lease 2 s)")
        check(waited < 10, "redelivered soon after the lease expired")
    print("ok: a killed consumer's batch went to another consumer after its lease")


if "--victim" in sys.argv:
    asyncio.run(victim())
else:
    asyncio.run(main())
