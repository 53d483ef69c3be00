"""Throughput and ack latency of the Slack bot with one and with two replicas (HTTP mode).

    .venv/bin/python bench/replicas.py [--events 300] [--concurrency 16]

Starts a throwaway PostgreSQL (tests/pg_server.py: needs the server binaries) and the tests' fake Slack, then for
each set-up starts real `mindie-help serve --http` processes, sends signed app_mention events round-robin from
`--concurrency` client threads, and reports:
* events/s: events sent / time from the first send until the fake Slack has received the last reply;
* ack latency p50/p99: time for a replica to answer the HTTP request (what Slack's 3 s limit applies to).
Set-ups: one replica on SQLite (the default), one on PostgreSQL, two on PostgreSQL. Everything runs on this
machine, so the client, the fake Slack and PostgreSQL share its cores with the replicas.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "slack")]

from fake_slack import BOT_TOKEN, SIGNING_SECRET, TEAM_ID, FakeSlack  # noqa: E402
from pg_server import PostgresServer, find_bindir, free_port  # noqa: E402

LOG = "[2025-03-11 10:22:41.502] [7321] [ERROR] [server] Socket bind failed, ip 127.0.0.1 port 1025"
QUESTIONS = [
    "<@UBOT0001> RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB",
    f"<@UBOT0001> the service died:\n```{LOG}```",
    "<@UBOT0001> HCCL init failed with EI0006 on rank 3, what should I check?",
]


def signed_post(url: str, body: str) -> tuple[int | None, float]:
    ts = str(int(time.time()))
    signature = "v0=" + hmac.new(SIGNING_SECRET.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    request = urllib.request.Request(url, data=body.encode(), method="POST", headers={
        "Content-Type": "application/json", "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature})
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError:
        status = None
    return status, time.perf_counter() - started


def start_replicas(count: int, database_url: str, fake: FakeSlack, logs: Path) -> list[tuple[subprocess.Popen, int]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "MINDIE_HELP_"))}
    env.update({"HF_HUB_OFFLINE": "1", "SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
                "MINDIE_HELP_SLACK_API_URL": fake.api_url, "MINDIE_HELP_DATABASE_URL": database_url,
                "MINDIE_HELP_COOLDOWN_SECONDS": "0", "MINDIE_HELP_LOG_LEVEL": "WARNING",
                "MINDIE_HELP_RATE_USER_PER_MINUTE": "0", "MINDIE_HELP_RATE_CHANNEL_PER_MINUTE": "0"})  # throughput, not abuse
    started = []
    for n in range(count):
        port = free_port()
        with (logs / f"replica-{count}-{n}.log").open("wb") as log:
            proc = subprocess.Popen([sys.executable, "-m", "bot", "serve", "--http", "--host", "127.0.0.1", "--port", str(port)],
                                    cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        started.append((proc, port))
    for proc, port in started:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"a replica exited; see {logs}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("a replica did not start in 180 s") from None
                time.sleep(0.2)
    return started


def run(count: int, database_url: str, fake: FakeSlack, events: int, concurrency: int, logs: Path, tag: str) -> dict:
    replicas = start_replicas(count, database_url, fake, logs)
    urls = [f"http://127.0.0.1:{port}/slack/events" for _, port in replicas]

    def send(n: int) -> tuple[int | None, float]:
        event = {"type": "app_mention", "user": f"U{n % 50:03d}", "channel": f"C0BENCH{n % 8}", "ts": f"1800{tag}{n:06d}.000100",
                 "text": QUESTIONS[n % len(QUESTIONS)]}
        payload = {"token": "x", "team_id": TEAM_ID, "api_app_id": "A0TEST", "type": "event_callback",
                   "event_id": f"Ev{tag}{n:06d}", "event_time": int(time.time()), "event": {"event_ts": event["ts"], **event}}
        return signed_post(urls[n % len(urls)], json.dumps(payload))

    try:
        for n in range(-10, 0):  # warm-up: first answers load lazy parts of the engine
            send(n)
        while len(fake.posts()) < 10:
            time.sleep(0.05)
        fake.reset()
        started = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            results = list(pool.map(send, range(events)))
        acked = time.perf_counter()
        while len(fake.posts()) < events and time.perf_counter() - acked < 300:
            time.sleep(0.02)
        done = time.perf_counter()
        answered = len(fake.posts())
    finally:
        for proc, _ in replicas:
            proc.terminate()
        for proc, _ in replicas:
            proc.wait(30)
        fake.reset()
    latencies = sorted(t for status, t in results if status == 200)
    return {
        "answered": answered,
        "failed_acks": sum(1 for status, _ in results if status != 200),
        "events_per_s": events / (done - started),
        "ack_p50_ms": 1000 * statistics.median(latencies),
        "ack_p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    bindir = find_bindir()
    if bindir is None:
        raise SystemExit("PostgreSQL server binaries not found (apt-get install postgresql)")
    logs = Path(tempfile.mkdtemp(prefix="mindie-bench-"))
    server = PostgresServer(bindir).start()
    fake = FakeSlack().start()
    rows = []
    try:
        setups = [("1 replica, SQLite", 1, f"sqlite:///{logs / 'bench.sqlite3'}"), ("1 replica, PostgreSQL", 1, server.create_database()),
                  ("2 replicas, PostgreSQL", 2, server.create_database())]
        for k, (name, count, url) in enumerate(setups):
            result = run(count, url, fake, args.events, args.concurrency, logs, str(k))
            rows.append((name, result))
            print(f"{name}: {json.dumps({key: round(v, 1) if isinstance(v, float) else v for key, v in result.items()})}", file=sys.stderr)
    finally:
        fake.stop()
        server.stop()
    print(f"\n{args.events} events, {args.concurrency} concurrent senders, {os.cpu_count()} cores\n")
    print("| set-up | events/s | ack p50 ms | ack p99 ms | answered |")
    print("|---|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {r['events_per_s']:.1f} | {r['ack_p50_ms']:.1f} | {r['ack_p99_ms']:.1f} | {r['answered']}/{args.events} |")


if __name__ == "__main__":
    main()
