"""Fixtures: a fake Slack Web API and the real Bolt app served over HTTP on 127.0.0.1.

The engine is the session-wide `engine` fixture of tests/conftest.py (the real Engine.from_settings, built once).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
from fake_slack import FakeSlack  # noqa: E402
from slack_harness import Harness, make_settings  # noqa: E402


@pytest.fixture(scope="session")
def fake_slack() -> Iterator[FakeSlack]:
    fake = FakeSlack().start()
    yield fake
    fake.stop()


@pytest.fixture
def make_harness(engine, fake_slack: FakeSlack, tmp_path: Path):
    from bot.slack.app import SlackBot
    from bot.slack.server import make_server

    made: list[Harness] = []

    def factory(**overrides: Any) -> Harness:
        settings = make_settings(fake_slack, tmp_path, **overrides)
        bot = SlackBot(settings, engine)
        server = make_server(bot.app, engine.status, "127.0.0.1", 0, signing_secret=bot.signing_secret)
        server.start_background()
        harness = Harness(bot, server, fake_slack, settings)
        made.append(harness)
        return harness

    fake_slack.reset()
    yield factory
    for harness in made:
        harness.bot.wait_idle(10)
        harness.server.stop()
        harness.bot.close()
        harness.bot.feedback.close()
    fake_slack.reset()


@pytest.fixture
def harness(make_harness) -> Harness:
    return make_harness()


