"""The queen-mq client with a bearer token (Queen(url, bearer_token=...)):
pushes and pops, and every popped message carries the token's `sub` as
`producerSub`, whatever the pushed body said. A client with a bad token is
refused, and the queue shows it changed nothing. QUEEN_URL names the
broker, QUEEN_TOKEN is a valid token for subject QUEEN_SUB, QUEEN_BAD_TOKEN
an invalid one."""

import asyncio
import os

import httpx
from common import check
from queen import Queen


async def refused(what, call):
    try:
        result = await call()
    except httpx.HTTPStatusError as e:
        check(e.response.status_code == 401, f"{what}: 401, not {e.response.status_code}")
        return
    check(False, f"{what} was not refused: {result}")


async def main():
    url = os.environ["QUEEN_URL"]
    sub = os.environ["QUEEN_SUB"]
    async with Queen(url, bearer_token=os.environ["QUEEN_TOKEN"]) as client:
        await client.queue("py-bearer").create()
        items = [{"transactionId": f"t-{n}", "data": {"n": n}, "producerSub": "mallory"} for n in range(5)]
        await client.queue("py-bearer").push(items)

        async with Queen(url, bearer_token=os.environ["QUEEN_BAD_TOKEN"], retry_attempts=1) as intruder:
            await refused("push with a bad token",
                          lambda: intruder.queue("py-bearer").push([{"transactionId": "x", "data": {}}]))
            # The client's pop does not raise on a 401: it prints "Pop
            # failed: <error>" and answers no messages.
            stolen = await intruder.queue("py-bearer").batch(10).wait(False).pop()
            check(stolen == [], f"a pop with a bad token got nothing: {stolen}")

        got = await client.queue("py-bearer").batch(10).wait(False).pop()
        check([m["data"]["n"] for m in got] == list(range(5)), f"the five pushed, no more: {got}")
        check(all(m["producerSub"] == sub for m in got), f"producerSub is the token's sub: {got}")
        check(all(m["deliveryAttempt"] == 1 for m in got), f"nothing was leased before: {got}")
        await client.ack(got, True)
        print(f"bearer: pushed and popped {len(got)} messages as {sub}")


asyncio.run(main())
