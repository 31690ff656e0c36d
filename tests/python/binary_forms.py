"""Drives the binary forms of the native API (spec section 4) with the
official queen-mq client (2.6.0) and its constructor options `binary_push`,
`push_compression` and `framed_pop`, against what the same client gets
over JSON: push answers (queued and duplicate), framed pops that ack as
JSON pops do, and a transaction with pushes under `push_compression`.
Exits non-zero with the reason on any mismatch. QUEEN_URL names the broker.
"""

import asyncio
import os

from common import check
from queen import Queen
from queen.http import http_client

# Counts what went binary: the client falls back to JSON silently (a push it
# cannot encode, a pop answered in JSON), which would pass unnoticed.
SEEN = {"push": 0, "transaction": 0, "framed": 0}


def counting(name, original):
    def wrapper(*args, **kwargs):
        result = original(*args, **kwargs)
        if result is not None:
            SEEN[name] += 1
        return result

    return wrapper


http_client.binary_push_body = counting("push", http_client.binary_push_body)
http_client.transaction_frames = counting("transaction", http_client.transaction_frames)
http_client.decode_pop_frames = counting("framed", http_client.decode_pop_frames)

ITEMS = [
    {"transactionId": "a", "data": {"k": "é", "n": [1, 2.5, None]}},
    {"transactionId": "b", "data": "text"},
    {"data": None},
    {"data": 7},
    {"transactionId": "c", "data": {"deep": {"x": True}}},
]


def strip(answer):
    """A push answer without what differs by construction: the ids of new
    messages, the transaction ids the client minted, the queue name."""
    return [
        {k: v for k, v in a.items() if k not in ("message_id", "queueName", "partitionId")
         and not (k == "transaction_id" and v not in ("a", "b", "c", "d"))}
        for a in answer
    ]


async def push_twice(client, queue):
    """Pushes ITEMS, then the first two and a new one again."""
    first = await client.queue(queue).partition("p").push(ITEMS)
    again = await client.queue(queue).partition("p").push(
        ITEMS[:2] + [{"transactionId": "d", "data": [4]}]
    )
    check(len(first) == 5 and len(again) == 3, f"{queue}: {first} {again}")
    for n in range(2):
        check(again[n]["status"] == "duplicate", f"{queue}: {again}")
        check(again[n]["message_id"] == first[n]["message_id"], f"{queue}: the original id")
        check(again[n]["offset"] == first[n]["offset"], f"{queue}: the original offset")
    return first, again


def same_messages(framed, plain, what):
    """A framed pop's messages equal the JSON pop's but for the lease and
    group (another consumer) and the keys a frame leaves out."""
    check(len(framed) == len(plain) > 0, f"{what}: {len(framed)} vs {len(plain)}")
    for f, p in zip(framed, plain):
        p = {k: v for k, v in p.items() if k not in ("queue", "retryCount")}
        for m in (f, p):
            m.pop("leaseId")
            m.pop("consumerGroup")
        check(f == p, f"{what}: framed {f} != JSON {p}")


async def main():
    url = os.environ["QUEEN_URL"]
    async with Queen(url) as plain, Queen(url, binary_push=True) as binary, Queen(
        url, binary_push=True, push_compression=True
    ) as compressed, Queen(url, framed_pop=True) as framed:
        json_first, json_again = await push_twice(plain, "py-bin-json")
        for client, queue in ((binary, "py-bin-raw"), (compressed, "py-bin-zstd")):
            first, again = await push_twice(client, queue)
            check(strip(first) == strip(json_first), f"{queue}: {first} vs {json_first}")
            check(strip(again) == strip(json_again), f"{queue}: {again} vs {json_again}")
            check(set(first[0]) == set(json_first[0]), f"{queue}: answer keys {first[0]}")

        # Every queue, read framed and read as JSON, holds the same messages.
        for queue in ("py-bin-json", "py-bin-raw", "py-bin-zstd"):
            got = await framed.queue(queue).group("framed").batch(100).wait(False).pop()
            want = await plain.queue(queue).group("json").batch(100).wait(False).pop()
            check([m["data"] for m in got] == [i["data"] for i in ITEMS] + [[4]],
                  f"{queue}: {[m['data'] for m in got]}")
            check(all(m["createdAt"].endswith("Z") and len(m["createdAt"]) == 24 for m in got),
                  f"{queue}: createdAt {got[0]['createdAt']}")
            same_messages(got, want, queue)

        # Pop and ack through framed pops, in queue mode: then nothing is left.
        popped = await framed.queue("py-bin-zstd").batch(4).wait(False).pop()
        check(len(popped) == 4 and popped[0]["leaseId"], f"framed pop: {popped}")
        acked = await framed.ack(popped, "completed")
        check(not (isinstance(acked, dict) and acked.get("error")), f"ack: {acked}")
        rest = await framed.queue("py-bin-zstd").batch(100).wait(False).pop()
        check([m["offset"] for m in rest] == [4, 5], f"after the ack: {rest}")
        await framed.ack(rest, "completed")
        empty = await framed.queue("py-bin-zstd").batch(100).wait(False).pop()
        check(empty == [], f"everything acked: {empty}")

        # A transaction with pushes under push_compression: the binary body,
        # its results put back in the caller's order by the client.
        work = await compressed.queue("py-bin-raw").batch(1).wait(False).pop()
        check(len(work) == 1, f"work: {work}")
        done = await (
            compressed.transaction()
            .queue("py-bin-out").partition("o").push([{"transactionId": "out-1", "data": {"r": 1}},
                                                      {"transactionId": "out-2", "data": [2]}])
            .ack(work[0], "completed")
            .commit()
        )
        check(done and done["success"], f"transaction: {done}")
        kinds = [r["type"] for r in done["results"]]
        check(kinds == ["push", "push", "ack"], f"results in the caller's order: {done['results']}")
        check([r["index"] for r in done["results"]] == [0, 1, 2], f"indexes: {done['results']}")
        check(done["results"][0]["transactionId"] == "out-1", f"{done['results']}")
        try:
            again = await (
                compressed.transaction()
                .queue("py-bin-out").partition("o").push([{"transactionId": "out-1", "data": 0}])
                .commit()
            )
            check(False, f"a repeated push must raise duplicate, got {again}")
        except Exception as error:  # noqa: BLE001 - the client raises a plain Exception
            check("duplicate" in str(error), f"raised duplicate: {error}")
        out = await framed.queue("py-bin-out").batch(10).wait(False).pop()
        check([m["data"] for m in out] == [{"r": 1}, [2]], f"stored by the transaction: {out}")
        check([m["transactionId"] for m in out] == ["out-1", "out-2"], f"{out}")
        left = await plain.queue("py-bin-raw").batch(100).wait(False).pop()
        check(len(left) == 5, f"the transaction acked its message: {len(left)} left")
    # 2 pushes by each binary client, the good transaction and its repeat,
    # and every framed pop with messages (3 queues, 2 acked pops, the output).
    check(SEEN == {"push": 4, "transaction": 2, "framed": 6}, f"binary requests: {SEEN}")
    print("ok: queen-mq binary push, compressed push, framed pop and binary transaction")


asyncio.run(main())
