"""Two consumer groups each receive every message. QUEEN_URL names the broker."""

import asyncio
import os

from common import as_list, check
from queen import Queen


async def main():
    url = os.environ["QUEEN_URL"]
    async with Queen(url) as client:
        await client.queue("py-fanout").create()
        for p in range(3):
            await client.queue("py-fanout").partition(f"p{p}").push(
                [{"transactionId": f"f-{p}-{n}", "data": {"p": p, "n": n}} for n in range(10)]
            )

        seen = {"billing": [], "shipping": []}

        def handler_for(group):
            async def handler(messages):
                seen[group].extend(m["transactionId"] for m in as_list(messages))

            return handler

        await asyncio.gather(
            *(
                client.queue("py-fanout").group(g).batch(4).partitions(3).limit(30)
                .timeout_millis(1000).idle_millis(3000).consume(handler_for(g))
                for g in seen
            )
        )
        expected = sorted(f"f-{p}-{n}" for p in range(3) for n in range(10))
        for group, txns in seen.items():
            check(sorted(txns) == expected, f"{group} saw {len(txns)} of 30: {sorted(txns)}")

        groups = await client.admin.list_consumer_groups()
        names = {g["name"] for g in groups if g["queueName"] == "py-fanout"}
        check({"billing", "shipping"} <= names, f"groups listed: {groups}")
    print("ok: each group received every message")


asyncio.run(main())
