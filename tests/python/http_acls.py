"""The queen-mq client against ACLs on the HTTP door, with Basic
credentials in its custom headers: the user the ACLs allow (QUEEN_ALLOWED,
"name:password") configures, pushes, pops and acks queue acl-py; the user
they do not allow (QUEEN_DENIED) gets a 403 "forbidden" raised as an
HTTPStatusError on push and configure, and an empty pop (the client's pop
swallows errors), having written and leased nothing."""

import asyncio
import base64
import os

import httpx
from common import check
from queen import Queen


def basic(account):
    return {"Authorization": "Basic " + base64.b64encode(account.encode()).decode()}


async def refused(what, call):
    try:
        result = await call()
    except httpx.HTTPStatusError as e:
        check(e.response.status_code == 403, f"{what}: 403, not {e.response.status_code}")
        body = e.response.json()
        check(body.get("code") == "forbidden", f"{what}: code forbidden: {body}")
        check(getattr(e, "code", None) == "forbidden", f"{what}: the client's error code: {e!r}")
        return body
    check(False, f"{what} was not refused: {result}")


async def main():
    url = os.environ["QUEEN_URL"]
    async with Queen(url, headers=basic(os.environ["QUEEN_ALLOWED"])) as client:
        await client.queue("acl-py").create()
        async with Queen(url, headers=basic(os.environ["QUEEN_DENIED"]), retry_attempts=1) as intruder:
            body = await refused(
                "a push without WRITE",
                lambda: intruder.queue("acl-py").push([{"transactionId": "x", "data": {"who": "intruder"}}]),
            )
            check(body["operation"] == "WRITE" and body["resourceName"] == "acl-py", f"names WRITE on acl-py: {body}")
            await refused("a configure without CREATE", lambda: intruder.queue("acl-elsewhere").create())
            stolen = await intruder.queue("acl-py").batch(10).wait(False).pop()
            check(stolen == [], f"a pop without READ got nothing: {stolen}")

        await client.queue("acl-py").push([{"transactionId": f"t-{n}", "data": {"n": n}} for n in range(3)])
        got = await client.queue("acl-py").batch(10).wait(False).pop()
        check([m["data"]["n"] for m in got] == [0, 1, 2], f"the three pushed, nothing of the intruder's: {got}")
        check(all(m["deliveryAttempt"] == 1 for m in got), f"the intruder leased nothing: {got}")
        await client.ack(got, True)
        print(f"acls: the denied client was refused with 403; the allowed one moved {len(got)} messages")


asyncio.run(main())
