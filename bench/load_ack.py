"""Acks under load (issue #11, finding 2): many megabyte pastes in flight, and every slash command and button
click must still be acknowledged within Slack's 3 seconds, with no reply lost or sent twice.

The real engine and the real HTTP server on 127.0.0.1, the tests' fake Slack (tests/slack/fake_slack.py) for
the Web API, response URLs and file downloads; requests are signed as Slack signs them.

    .venv/bin/python bench/load_ack.py                       # 50 pastes of 1 MB, 20 commands, 20 clicks
    .venv/bin/python bench/load_ack.py --pastes 10 --size 200000

Exit status 1 when an ack took 3 s or more, a /healthz probe 1 s or more, or a reply was lost or duplicated.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "slack")]

from fake_slack import FakeSlack  # noqa: E402
from hostile_cases import ALL, OOM_LINE, SOCKET_LINE  # noqa: E402
from slack_harness import Harness, make_settings  # noqa: E402

from bot.slack import blocks as bk  # noqa: E402

ACK_LIMIT = 3.0
HEALTH_LIMIT = 1.0
# Hostile megabytes, the engine's slowest kinds among them, between ordinary logs with an error to find.
HOSTILE = ["error-lines", "signature-lines", "one-letter-lines", "closed-mentions-1e5", "unclosed-user-mention",
           "spaces-1mb-line", "backticks", "numbers-commas", "cjk", "lone-surrogates"]


def paste(n: int, size: int) -> str:
    """The n-th paste: every third a hostile one, the others a log of `size` bytes with an error in its middle."""
    if n % 3 == 0:
        data = ALL[HOSTILE[(n // 3) % len(HOSTILE)]]()
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        return text[:size]
    noise = f"[2025-03-11 10:00:{n % 60:02d}] [INFO] [worker-{n}] heartbeat ok, queue depth 3\n"
    half = noise * (size // 2 // len(noise))
    return half + (OOM_LINE if n % 2 else SOCKET_LINE) + "\n" + half


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] if ordered else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pastes", type=int, default=50)
    parser.add_argument("--size", type=int, default=1_000_000, help="bytes per paste")
    parser.add_argument("--commands", type=int, default=20)
    parser.add_argument("--clicks", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for every reply")
    args = parser.parse_args()

    from bot.engine.engine import Engine
    from bot.slack.app import SlackBot
    from bot.slack.server import make_server

    fake = FakeSlack().start()
    scratch = Path(tempfile.mkdtemp(prefix="mindie-help-load-"))
    settings = make_settings(fake, scratch)
    print(f"loading the engine ({settings.model}) ...", flush=True)
    engine = Engine.from_settings(settings)
    bot = SlackBot(settings, engine)
    server = make_server(bot.app, engine.status, "127.0.0.1", 0, signing_secret=bot.signing_secret)
    server.start_background()
    harness = Harness(bot, server, fake, settings)
    health_url = f"http://127.0.0.1:{server.port}/healthz"

    probes: list[float] = []
    stop = threading.Event()

    def probe() -> None:
        while not stop.is_set():
            started = time.monotonic()
            with urllib.request.urlopen(health_url, timeout=30) as response:
                response.read()
            probes.append(time.monotonic() - started)
            stop.wait(0.1)

    paste_acks: list[float] = []
    statuses: list[int] = []
    lock = threading.Lock()

    def send_paste(n: int) -> None:
        text = paste(n, args.size)
        if n % 2:  # half as a DM, half as a shared .log file
            info = fake.add_file(f"F0LOAD{n:03d}", f"load-{n}.log", text.encode("utf-8", "replace"))
            status, _, took = harness.event({"type": "message", "subtype": "file_share", "channel_type": "im", "channel": f"D0LOAD{n:03d}",
                                             "user": f"UPASTE{n:03d}", "ts": f"100.{n}", "text": "", "files": [info]})
        else:
            status, _, took = harness.event({"type": "message", "channel_type": "im", "channel": f"D0LOAD{n:03d}",
                                             "user": f"UPASTE{n:03d}", "ts": f"100.{n}", "text": text})
        with lock:
            paste_acks.append(took)
            statuses.append(status)

    command_acks: list[float] = []
    click_acks: list[float] = []
    button = {"action_id": bk.ACTION_FEEDBACK_UP, "text": {"type": "plain_text", "text": "👍 Helpful"},
              "value": json.dumps({"e": "npu-out-of-memory", "f": "load-fingerprint", "l": "en"})}

    threading.Thread(target=probe, daemon=True).start()
    started = time.monotonic()
    senders = [threading.Thread(target=send_paste, args=(n,)) for n in range(args.pastes)]
    for thread in senders:
        thread.start()
    while bot.answers.pending() < min(5, args.pastes) and any(t.is_alive() for t in senders):
        time.sleep(0.02)
    print(f"{args.pastes} pastes of {args.size:,} bytes sent; answer queue {bot.answers.pending()} deep; now commands and clicks", flush=True)
    for k in range(max(args.commands, args.clicks)):
        if k < args.commands:
            status, _, took = harness.command(OOM_LINE, f"load-cmd{k:03d}", user=f"UCMD{k:03d}", channel=f"C0LOAD{k % 5}")
            command_acks.append(took if status == 200 else float("inf"))
        if k < args.clicks:
            status, _, took = harness.click(button, f"load-click{k:03d}", user=f"UCLICK{k:03d}", channel=f"C0LOAD{k % 5}")
            click_acks.append(took if status == 200 else float("inf"))
        time.sleep(0.25)  # spread over the time the pastes are being answered
    for thread in senders:
        thread.join()
    queue_seen = bot.answers.pending()

    def replies() -> tuple[int, int, int]:
        pastes_done = sum(1 for n in range(args.pastes) if fake.posts(f"D0LOAD{n:03d}"))
        commands_done = sum(1 for k in range(args.commands) if fake.responses(f"load-cmd{k:03d}"))
        clicks_done = sum(1 for k in range(args.clicks) if fake.responses(f"load-click{k:03d}"))
        return pastes_done, commands_done, clicks_done

    deadline = time.monotonic() + args.timeout
    while replies() != (args.pastes, args.commands, args.clicks) and time.monotonic() < deadline:
        time.sleep(0.2)
    all_replied = time.monotonic() - started
    bot.wait_idle(60)
    stop.set()

    lost = [f"paste {n}" for n in range(args.pastes) if not fake.posts(f"D0LOAD{n:03d}")]
    lost += [f"command {k}" for k in range(args.commands) if not fake.responses(f"load-cmd{k:03d}")]
    lost += [f"click {k}" for k in range(args.clicks) if not fake.responses(f"load-click{k:03d}")]
    twice = [f"paste {n}" for n in range(args.pastes) if len(fake.posts(f"D0LOAD{n:03d}")) > 1]
    twice += [f"command {k}" for k in range(args.commands) if len(fake.responses(f"load-cmd{k:03d}")) > 1]
    twice += [f"click {k}" for k in range(args.clicks) if len(fake.responses(f"load-click{k:03d}")) > 1]
    budget_cut = sum(1 for n in range(args.pastes) for c in fake.posts(f"D0LOAD{n:03d}") if "time budget ran out" in c.blocks_json())

    print()
    print("| requests | n | ack p50 | ack p99 | ack max |")
    print("|---|---|---|---|---|")
    for name, values in (("slash commands", command_acks), ("button clicks", click_acks), ("1 MB pastes (events)", paste_acks)):
        print(f"| {name} | {len(values)} | {statistics.median(values) * 1000:.0f} ms | {percentile(values, 99) * 1000:.0f} ms | {max(values) * 1000:.0f} ms |")
    print(f"\n/healthz probes: {len(probes)}, slowest {max(probes) * 1000:.0f} ms, p99 {percentile(probes, 99) * 1000:.0f} ms")
    print(f"answer queue still {queue_seen} deep when the last command and click were acked")
    print(f"every reply in after {all_replied:.1f} s; {budget_cut} of {args.pastes} pastes answered from their error lines after the time budget ran out")
    print(f"lost: {len(lost)} {lost[:5]}; duplicated: {len(twice)} {twice[:5]}; HTTP statuses of pastes: {sorted(set(statuses))}")

    server.stop()
    bot.close()
    bot.feedback.close()
    fake.stop()
    slow = [t for t in command_acks + click_acks if t >= ACK_LIMIT]
    ok = not slow and max(probes) < HEALTH_LIMIT and not lost and not twice and set(statuses) == {200}
    print("PASS" if ok else f"FAIL: {len(slow)} slow acks")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
