"""Kafka produce and consume as an application does it (issue 22's outside harness).

usage: kafka_fetch_harness.py BIN DATABASE_URL PARTITIONS RECORDS [CONSUMES]

Starts the queen binary BIN on DATABASE_URL with PARTITIONS partitions per
topic, produces RECORDS records of 100 bytes (confluent-kafka's defaults with
acks=all, linger.ms=5, 1 MiB batches), then consumes them CONSUMES times with
one consumer assigned from offset 0, printing records/s, the broker's CPU
seconds over each consume and its peak RSS. KDEBUG=fetch,protocol turns on
librdkafka's debug log in the consumer (every Fetch answer's size).
"""
import sys, time, subprocess, os, re, threading
from confluent_kafka import Producer, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

bin_, db, parts, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
runs = int(sys.argv[5]) if len(sys.argv) > 5 else 1
env = dict(os.environ, QUEEN_LOG="warn")
p = subprocess.Popen([bin_, "--http-addr", "127.0.0.1:0", "--kafka-addr", "127.0.0.1:0", "--database-url", db, "--default-partitions", str(parts)], stdout=subprocess.PIPE, env=env, text=True)
for line in p.stdout:
    if line.startswith("queen listening"):
        kafka = re.search(r"kafka=(\S+)", line).group(1); break
threading.Thread(target=lambda: [None for _ in p.stdout], daemon=True).start()
def rss():
    s = open(f"/proc/{p.pid}/status").read()
    return int(re.search(r"VmHWM:\s+(\d+)", s).group(1)) / 1024
def cpu():
    f = open(f"/proc/{p.pid}/stat").read().split(")")[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
topic = "h"
pr = Producer({"bootstrap.servers": kafka, "acks": "all", "linger.ms": 5, "batch.size": 1048576, "broker.address.family": "v4"})
payload = b"x" * 100
pr.produce(topic, payload, partition=0); pr.flush()
t = time.time()
for i in range(n):
    while True:
        try:
            pr.produce(topic, payload, partition=i % parts); break
        except BufferError:
            pr.poll(0.01)
pr.flush()
print(f"produce {parts}p: {n/(time.time()-t):.0f} rec/s", flush=True)
for r in range(runs):
    c = Consumer({"bootstrap.servers": kafka, "group.id": f"g{r}", "enable.auto.commit": False, "broker.address.family": "v4", **({"debug": os.environ["KDEBUG"]} if os.environ.get("KDEBUG") else {})})
    c.assign([TopicPartition(topic, i, 0) for i in range(parts)])
    c0 = cpu(); t = time.time(); seen = 0
    while seen < n + 1:
        ms = c.consume(min(10000, n + 1 - seen), 5.0)
        if not ms: raise SystemExit(f"stalled at {seen}")
        seen += len(ms)
    el = time.time() - t
    print(f"consume {parts}p run {r}: {seen/el:.0f} rec/s, broker cpu {cpu()-c0:.2f}s of {el:.2f}s", flush=True)
    c.close()
print(f"peak RSS {rss():.1f} MiB")
p.terminate(); p.wait()
