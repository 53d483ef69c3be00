"""`/mindie-help env`: the environment check on demand, answered in the slash command's acknowledgement."""

from __future__ import annotations

import json

PASTE = """```
torch                 2.7.0
torch_npu             2.5.1.post1
CANN: 8.1.RC1
```"""


def test_env_subcommand_checks_a_paste_ephemerally(harness):
    status, body, elapsed = harness.command(f"env {PASTE}", "cmd-env")
    assert status == 200 and elapsed < 3.0
    data = json.loads(body)
    assert data["response_type"] == "ephemeral"
    blocks = json.dumps(data["blocks"], ensure_ascii=False)
    assert "*Environment*" in blocks and "torch 2.7.0 ↔ torch_npu 2.5.1.post1" in blocks and "pip install torch==2.5.1" in blocks
    assert "torch_npu 2.5.1.post1 is built for torch 2.5.1" in data["text"]
    harness.idle()
    assert not harness.fake.responses("cmd-env") and not harness.fake.posts()  # nothing else is sent


def test_env_subcommand_without_a_paste_lists_the_commands(harness):
    status, body, _ = harness.command("env", "cmd-env-empty")
    data = json.loads(body)
    assert status == 200 and data["response_type"] == "ephemeral"
    assert "npu-smi info" in json.dumps(data["blocks"]) and "python --version" in json.dumps(data["blocks"])


def test_usage_mentions_the_env_subcommand(harness):
    _, body, _ = harness.command("help", "cmd-help")
    assert "/mindie-help env" in json.loads(body)["text"]
