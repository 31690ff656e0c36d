"""A handler that raises: the client nacks (`failed`), the broker redelivers
until retryLimit is spent, then files the message to the DLQ with the
handler's error. QUEEN_URL names the broker."""

import asyncio
import os

from common import as_list, check
from queen import Queen


async def main():
    url = os.environ["QUEEN_URL"]
    async with Queen(url) as client:
        await client.queue("py-risky").config({"retry_limit": 2, "lease_time": 30}).create()
        await client.queue("py-risky").push([{"transactionId": "job-1", "data": {"job": 1}}])

        attempts = []

        async def handler(messages):
            for m in as_list(messages):
                attempts.append((m["transactionId"], m["deliveryAttempt"]))
            raise RuntimeError("payment gateway said no")

        await client.queue("py-risky").group("workers").batch(1).timeout_millis(1000).idle_millis(3000).consume(handler)
        check(attempts == [("job-1", 1), ("job-1", 2), ("job-1", 3)], f"1 + retryLimit deliveries: {attempts}")

        dlq = await client.queue("py-risky").dlq("workers").get()
        check(dlq["total"] == 1, f"one dead letter: {dlq}")
        letter = dlq["messages"][0]
        check(letter["transactionId"] == "job-1", f"the idempotency key is kept: {letter}")
        check("payment gateway said no" in (letter["errorMessage"] or ""), f"error kept: {letter}")
        check(letter["data"] == {"job": 1}, f"payload kept: {letter}")

        # Another group is not affected by this group's dead letter.
        other = await client.queue("py-risky").group("auditors").batch(5).wait(False).pop()
        check([m["transactionId"] for m in other] == ["job-1"], f"other group: {other}")
    print("ok: retried then dead-lettered")


asyncio.run(main())
