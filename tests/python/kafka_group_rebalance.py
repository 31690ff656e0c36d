"""Three kafka-python consumer processes share an 8-partition topic while
8,000 numbered records are produced; once all three have partitions one is
SIGKILLed. After its session times out (6 s) the two others take over its
partitions, and together the members consume every number; a number is
consumed twice only if the killed member had printed it without
committing it. QUEEN_KAFKA names the broker. Exits non-zero on a mismatch.

With `--member NAME` the script is one consumer: it prints a JSON line per
event (assigned/revoked partitions, the numbers of each poll, each
successful commit) and commits synchronously after every poll.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

from common import check

KAFKA = os.environ["QUEEN_KAFKA"]
TOPIC = "kg-rebalance"
GROUP = "kg-rebalance-group"
PARTITIONS = 8
TOTAL = 8000
BATCH = 200
PAUSE_S = 0.5  # 40 batches: production lasts ~20 s, well past the takeover
MEMBERS = ["m0", "m1", "m2"]
VICTIM = "m1"
DEADLINE_S = 80
STARTED = time.monotonic()
PROCESS_S = 0.05


def emit(**event):
    print(json.dumps(event), flush=True)


def member(name):
    from kafka import ConsumerRebalanceListener, KafkaConsumer

    if os.environ.get("KG_LOG"):  # e.g. KG_LOG=INFO to see the group protocol on stderr
        import logging
        logging.basicConfig(level=os.environ["KG_LOG"], stream=sys.stderr,
                            format=f"%(asctime)s {name} %(name)s %(message)s")

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            emit(revoked=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned):
            emit(assigned=sorted(tp.partition for tp in assigned))

    consumer = KafkaConsumer(
        bootstrap_servers=KAFKA,
        group_id=GROUP,
        client_id=name,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        max_poll_records=100,
    )
    consumer.subscribe([TOPIC], listener=Listener())
    emit(started=True)
    while not stop.is_set():
        batches = consumer.poll(timeout_ms=200)
        numbers = [int(r.value) for records in batches.values() for r in records]
        if not numbers:
            continue
        emit(records=numbers)
        time.sleep(PROCESS_S)  # "processing": the window a kill leaves records uncommitted
        try:
            consumer.commit()
            emit(committed=len(numbers))
        except Exception as e:  # noqa: BLE001 - reported, the check judges it
            emit(commit_failed=repr(e))
    consumer.close()
    emit(closed=True)


class Child:
    """A member process and the events it printed, read by a thread."""

    def __init__(self, name):
        self.name = name
        self.events = []  # (monotonic time, event)
        self.lock = threading.Lock()
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--member", name],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
        self.stderr = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.process.stderr), daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                event = {"garbage": line}
            with self.lock:
                self.events.append((time.monotonic(), event))

    def snapshot(self):
        with self.lock:
            return list(self.events)

    def assignment(self, since=0.0):
        """The last assignment received after `since`, or None."""
        last = None
        for at, e in self.snapshot():
            if "assigned" in e and at >= since:
                last = e["assigned"]
        return last

    def numbers(self):
        return [n for _, e in self.snapshot() for n in e.get("records", [])]

    def uncommitted(self):
        """Numbers printed after the last successful commit."""
        pending = []
        for _, e in self.snapshot():
            if "records" in e:
                pending.extend(e["records"])
            elif "committed" in e:
                pending = []
        return pending


def produce(done):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=KAFKA, acks="all", linger_ms=5)
    for start in range(0, TOTAL, BATCH):
        futures = [producer.send(TOPIC, value=b"%d" % n, partition=n % PARTITIONS)
                   for n in range(start, start + BATCH)]
        for f in futures:
            f.get(timeout=30)
        time.sleep(PAUSE_S)
    producer.close()
    done.append(time.monotonic())


def wait_for(condition, deadline, what, children):
    while not condition():
        if time.monotonic() > deadline:
            dump(children)
            check(False, f"timed out waiting for {what}")
        for c in children:
            if c.process.poll() is not None and c.name != VICTIM:
                dump(children)
                check(False, f"member {c.name} exited with {c.process.returncode}")
        time.sleep(0.05)


def dump(children):
    for c in children:
        events = [(round(at - STARTED, 2), e) for at, e in c.snapshot() if "records" not in e and "committed" not in e]
        print(f"{c.name}: {len(c.numbers())} numbers, events {events}", file=sys.stderr)
        print(f"{c.name} stderr: {''.join(c.stderr)[-3000:]}", file=sys.stderr)


def main():
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=KAFKA)
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    admin.close()

    started = time.monotonic()
    deadline = started + DEADLINE_S
    children = [Child(name) for name in MEMBERS]
    produced = []
    producer = threading.Thread(target=produce, args=(produced,), daemon=True)
    producer.start()
    by_name = {c.name: c for c in children}
    victim = by_name[VICTIM]
    survivors = [c for c in children if c is not victim]

    try:
        # Every member has partitions of one generation: disjoint, all 8.
        def all_assigned():
            parts = [c.assignment() for c in children]
            if any(not p for p in parts):
                return False
            flat = [p for ps in parts for p in ps]
            return sorted(flat) == list(range(PARTITIONS))

        wait_for(all_assigned, deadline, "all three members to be assigned partitions", children)
        assigned_s = time.monotonic() - started
        wait_for(lambda: all(c.numbers() for c in children), deadline, "every member to consume", children)
        first_at = min(at for c in children for at, e in c.snapshot() if "records" in e)

        # Kill it between printing a poll's numbers and committing them,
        # after it committed a few polls.
        def victim_mid_batch():
            events = [e for _, e in victim.snapshot()]
            commits = sum(1 for e in events if "committed" in e)
            return commits >= 3 and "records" in events[-1]

        wait_for(victim_mid_batch, deadline, f"{VICTIM} to be processing a batch", children)
        victim_partitions = victim.assignment()

        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait()
        killed_at = time.monotonic()
        print(f"killed {VICTIM} at {killed_at - STARTED:.2f} s", file=sys.stderr)
        time.sleep(0.2)  # let the reader drain the killed member's pipe
        if produced:
            dump(children)
        check(not produced, "production ended before the kill: make it last longer")

        def taken_over():
            parts = [c.assignment(since=killed_at) for c in survivors]
            return all(parts) and sorted(p for ps in parts for p in ps) == list(range(PARTITIONS))

        wait_for(taken_over, deadline, "the survivors to take over all 8 partitions", children)
        takeover_s = time.monotonic() - killed_at

        def everything():
            seen = set()
            for c in children:
                seen.update(c.numbers())
            return len(seen) == TOTAL

        wait_for(everything, deadline, f"every one of the {TOTAL} numbers to be consumed", children)
        last_at = max(at for c in children for at, e in c.snapshot() if "records" in e)
        # Taken while both survivors are still members: once the first of
        # them closes, the group gives the other everything.
        final = {c.name: c.assignment(since=killed_at) for c in survivors}
    finally:
        for c in survivors:
            if c.process.poll() is None:
                c.process.send_signal(signal.SIGTERM)
        for c in children:
            try:
                c.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                c.process.kill()
                c.process.wait()

    def verify(condition, message):
        if not condition:
            dump(children)
        check(condition, message)

    for c in survivors:
        verify(c.process.returncode == 0, f"member {c.name} exited with {c.process.returncode}: "
                                         f"{''.join(c.stderr)[-3000:]}")
        failed = [e for _, e in c.snapshot() if "commit_failed" in e]
        verify(not failed, f"member {c.name} had commits refused: {failed}")

    # The survivors' assignments after the kill cover all partitions.
    verify(sorted(p for ps in final.values() for p in ps) == list(range(PARTITIONS)),
          f"final assignments do not cover the 8 partitions once each: {final}")
    # They took the killed member's partitions and consumed from them.
    after_kill = set()
    for c in survivors:
        for at, e in c.snapshot():
            if at > killed_at:
                after_kill.update(n % PARTITIONS for n in e.get("records", []))
    verify(set(victim_partitions) <= after_kill,
          f"the killed member's partitions {victim_partitions} were not all consumed by the survivors "
          f"after the kill (consumed from {sorted(after_kill)})")

    # Every number at least once; duplicates only for what the killed member had not committed.
    counts = {}
    for c in children:
        for n in c.numbers():
            counts[n] = counts.get(n, 0) + 1
    missing = sorted(set(range(TOTAL)) - set(counts))
    verify(not missing, f"{len(missing)} numbers never consumed: {missing[:20]}")
    verify(set(counts) == set(range(TOTAL)), f"unknown numbers consumed: {sorted(set(counts) - set(range(TOTAL)))[:20]}")
    duplicates = sorted(n for n, k in counts.items() if k > 1)
    uncommitted = set(victim.uncommitted())
    verify(all(counts[n] == 2 for n in duplicates),
          f"numbers consumed more than twice: {[(n, counts[n]) for n in duplicates if counts[n] > 2][:20]}")
    foreign = [n for n in duplicates if n not in uncommitted]
    verify(not foreign, f"duplicates the killed member had committed (or never consumed): {foreign[:20]} "
                       f"of {len(duplicates)} duplicates; its uncommitted tail had {len(uncommitted)}")
    verify(len(duplicates) <= len(uncommitted), "more duplicates than uncommitted records")
    for c in survivors:
        own = c.numbers()
        verify(len(own) == len(set(own)), f"member {c.name} consumed a number twice itself")

    producer.join(timeout=10)
    per_member = {c.name: len(c.numbers()) for c in children}
    span = last_at - first_at
    print(f"members assigned after {assigned_s:.2f} s; first records {first_at - started:.2f} s after start "
          f"(initial rebalance delay 3 s)")
    print(f"killed {VICTIM} holding partitions {victim_partitions}; survivors held all 8 partitions "
          f"{takeover_s:.2f} s after the kill (session timeout 6 s); final {final}")
    print(f"consumed per member {per_member}; {len(duplicates)} duplicates "
          f"(killed member's uncommitted tail: {len(uncommitted)})")
    ended = f"{produced[0] - started:.1f} s" if produced else "?"
    print(f"{TOTAL} records consumed in {span:.2f} s from first to last: {TOTAL / span:.0f} records/s "
          f"(production paced at ~{BATCH / PAUSE_S:.0f}/s, ended {ended} after start)")
    print("ok: the survivors took over the killed member's partitions and every number was consumed")


if len(sys.argv) > 2 and sys.argv[1] == "--member":
    member(sys.argv[2])
else:
    main()
