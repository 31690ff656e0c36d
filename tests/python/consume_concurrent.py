"""Ten concurrent consumers in queue mode on one queue of 20 partitions:
every message exactly once, in order within each partition.
QUEEN_URL names the broker."""

import asyncio
import os

from common import as_list, check
from queen import Queen

PARTITIONS = 20
PER_PARTITION = 50


async def main():
    url = os.environ["QUEEN_URL"]
    async with Queen(url) as client:
        await client.queue("py-busy").create()
        for p in range(PARTITIONS):
            await client.queue("py-busy").partition(f"p{p:02}").push(
                [{"transactionId": f"c-{p:02}-{n:03}", "data": {"p": p, "n": n}} for n in range(PER_PARTITION)]
            )

        by_partition = {}
        delivered = []
        holders = {}

        async def handler(messages):
            messages = as_list(messages)
            partition = messages[0]["partition"]
            check(holders.get(partition) is None, f"two consumers hold {partition} at once")
            holders[partition] = True
            await asyncio.sleep(0.001)  # let the other consumers run meanwhile
            for m in messages:
                delivered.append(m["transactionId"])
                by_partition.setdefault(m["partition"], []).append(m["data"]["n"])
            holders[partition] = None

        total = PARTITIONS * PER_PARTITION
        await client.queue("py-busy").concurrency(10).batch(7).timeout_millis(1000).idle_millis(3000).consume(handler)
        check(len(delivered) == total, f"{len(delivered)} deliveries for {total} messages")
        check(len(set(delivered)) == total, "no message delivered twice")
        for partition, ns in by_partition.items():
            check(ns == list(range(PER_PARTITION)), f"order kept in {partition}: {ns}")
    print(f"ok: {total} messages, 10 consumers, each once and in order per partition")


asyncio.run(main())
