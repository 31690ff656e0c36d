"""Drives transactions and `once` with the official queen-mq client (2.6.0).

The consume -> transaction(ack + push + once) -> commit pipeline performs
each effect once: a retried bundle collides on its push id (raised as
`duplicate`), and a second delivery of the same work (an upstream
duplicate with another transaction id) loses the `once` gate, which the
client returns, falsy, as `kv_precondition`; that message is then acked on
its own. Then `kv.once` answers True once and False until its TTL passes.
QUEEN_URL names the broker.
"""

import asyncio
import os

from common import check
from queen import Queen


async def step(client, message):
    order = message["data"]["order"]
    return await (
        client.transaction()
        .ack(message, "completed")
        .queue("py-tx-out")
        .push([{"transactionId": f"out-{message['transactionId']}", "data": {"order": order}}])
        .once("py-tx-done", f"order-{order}", ttl_seconds=3600)
        .commit()
    )


async def main():
    url = os.environ["QUEEN_URL"]
    async with Queen(url) as client:
        await client.queue("py-tx-in").create()
        await client.queue("py-tx-out").create()
        inputs = []
        for n in range(3):
            inputs += [{"transactionId": f"in-{n}", "data": {"order": n}},
                       {"transactionId": f"in-{n}-again", "data": {"order": n}}]
        await client.queue("py-tx-in").push(inputs)

        for n in range(3):
            got = await client.queue("py-tx-in").batch(1).wait(False).pop()
            check(len(got) == 1 and got[0]["transactionId"] == f"in-{n}", f"popped in-{n}: {got}")
            message = got[0]

            first = await step(client, message)
            check(first and first["success"], f"first run commits: {first}")
            kinds = [r["type"] for r in first["results"]]
            check(kinds == ["ack", "push", "kv"], f"flat results: {first['results']}")
            check(first["results"][2]["applied"] is True, f"the gate applied: {first['results']}")

            # The same bundle again: its push id is stored -> raised, nothing applied.
            try:
                again = await step(client, message)
                check(False, f"a repeated bundle must raise duplicate, got {again}")
            except Exception as error:  # noqa: BLE001 - the client raises a plain Exception
                check("duplicate" in str(error), f"raised duplicate: {error}")

            # The same work delivered again upstream: the gate refuses it,
            # returned (falsy), and the caller acks the message on its own.
            got = await client.queue("py-tx-in").batch(1).wait(False).pop()
            check(len(got) == 1 and got[0]["transactionId"] == f"in-{n}-again", f"popped the repeat: {got}")
            gated = await step(client, got[0])
            check(not gated, f"the gate refuses the repeat: {gated}")
            check(gated["reason"] == "kv_precondition" and gated["kvReason"] == "exists", f"{gated}")
            acked = await client.ack(got[0], "completed")
            check(not (isinstance(acked, dict) and acked.get("error")), f"separate ack: {acked}")

        out = await client.queue("py-tx-out").batch(100).wait(False).pop()
        ids = sorted(m["transactionId"] for m in out)
        check(ids == [f"out-in-{n}" for n in range(3)], f"one output per input: {ids}")
        left = await client.queue("py-tx-in").batch(10).wait(False).pop()
        check(left == [], f"every input was acked by its transaction: {left}")

        # kv.once: True once, False until the TTL passes, then True again.
        check(await client.kv.once("py-gate", "job-1", ttl_seconds=1) is True, "first once wins")
        check(await client.kv.once("py-gate", "job-1", ttl_seconds=1) is False, "second once loses")
        await asyncio.sleep(1.3)
        check(await client.kv.once("py-gate", "job-1", ttl_seconds=1) is True, "once wins again after the TTL")

        # Plain KV round trip through the client.
        put = await client.kv.put("py-kv", "cfg", {"mode": "a"}, forever=True)
        check(put["applied"] and put["version"] > 0, f"put: {put}")
        got = await client.kv.get("py-kv", "cfg")
        check(got["found"] and got["value"] == {"mode": "a"}, f"get: {got}")
    print("ok: queen-mq transactions and once performed each effect once")


asyncio.run(main())
