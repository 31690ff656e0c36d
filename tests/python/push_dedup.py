"""Drives a running broker with the official queen-mq Python client (2.6.0).

Configure a queue, push, push again with the same transaction id, and check
that the client sees `duplicate` with the original id and offset. Exits
non-zero (with the reason) on any mismatch. QUEEN_URL names the broker.
"""

import asyncio
import os
import sys

from queen import Queen


def check(condition, message):
    if not condition:
        print(f"FAILED: {message}", file=sys.stderr)
        sys.exit(1)


async def main():
    url = os.environ["QUEEN_URL"]
    async with Queen(url) as client:
        created = await client.queue("py-orders").config({"dedup_window_seconds": 86400}).create()
        check(not (isinstance(created, dict) and created.get("error")), f"configure failed: {created}")
        check(created["options"]["dedupWindowSeconds"] == 86400, f"window not applied: {created}")

        item = {"transactionId": "order-9137-paid", "data": {"orderId": 9137, "amount": 99.5}}
        first = await client.queue("py-orders").partition("customer-42").push([item])
        check(first[0]["status"] == "queued", f"first push: {first}")

        seen = []

        async def on_duplicate(items, _error):
            seen.extend(items)

        retry = await client.queue("py-orders").partition("customer-42").push([item]).on_duplicate(on_duplicate)
        check(retry[0]["status"] == "duplicate", f"retry: {retry}")
        check(retry[0]["message_id"] == first[0]["message_id"], "the duplicate names the original id")
        check(retry[0]["offset"] == first[0]["offset"], "the duplicate names the original offset")
        check(len(seen) == 1, f"on_duplicate saw {seen}")

        # The same id in another partition is a new message.
        other = await client.queue("py-orders").partition("customer-43").push([item])
        check(other[0]["status"] == "queued", f"other partition: {other}")

        # Items without an id get client-minted ones: a batch is stored whole, in order.
        batch = await client.queue("py-orders").push([{"data": {"n": n}} for n in range(100)])
        check([r["status"] for r in batch] == ["queued"] * 100, "a batch without ids is stored whole")
        check([r["offset"] for r in batch] == list(range(100)), "offsets are gapless from 0")

        queue = await client.admin.get_queue("py-orders")
        check(queue["totals"]["total"] == 102, f"stored messages: {queue['totals']}")

        deleted = await client.queue("py-orders").delete()
        check(not (isinstance(deleted, dict) and deleted.get("error")), f"delete: {deleted}")
    print("ok: queen-mq pushed, deduplicated and deleted")


asyncio.run(main())
