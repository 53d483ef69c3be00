"""Replay each spent held-out set on the code of its single measurement, and show what kinds of evidence the
answers rested on and how often each kind was right.

Usage: .venv/bin/python bench/replay_heldout.py [--work /tmp/replay]

Development sets flatter an engine (its entries were written for them); a held-out set measured once, on the code
of that moment, shows how answers of each kind fare on reports nobody tuned for. This checks out each of those
commits in a git worktree, runs `bench/replay_dump.py` under its code (each builds its own index: ~1 min a commit),
and prints, for the answered reports, helps / misleads by evidence: the top entry's signature strength, and
whether the paste held an error line (a root). It is the evidence behind the engine's rule that prose alone does
not answer a pasted error (README, How it works). Labels are today's `eval/` files.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Each held-out set and the commit it was measured on once (README, Quality; eval/README.md).
MEASURED = {
    "realworld-heldout.jsonl": "e45fe21",
    "realworld-heldout2.jsonl": "97e01b0",
    "realworld-heldout3.jsonl": "a0093eb",
    "realworld-heldout4.jsonl": "d0a7456",
    "realworld-heldout5.jsonl": "21c16d1",
    "realworld-heldout6.jsonl": "f8bf2e3",
    "realworld-heldout7.jsonl": "84df96a",
    "realworld-heldout8.jsonl": "1199818",
}


def replay(commit: str, sets: list[str], work: Path) -> list[dict]:
    tree, index, out = work / f"tree-{commit}", work / f"index-{commit}", work / f"replay-{commit}.jsonl"
    if not out.exists():
        if not tree.exists():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(tree), commit], check=True,
                           capture_output=True)
        env = dict(os.environ, PYTHONPATH=str(tree), MINDIE_HELP_CORPUS_DIR=str(tree / "corpus"),
                   MINDIE_HELP_INDEX_DIR=str(index), HF_HUB_OFFLINE="1")
        subprocess.run([sys.executable, str(ROOT / "bench" / "replay_dump.py"), str(out),
                        *[str(ROOT / "eval" / s) for s in sets]], check=True, env=env, cwd=tree,
                       stderr=subprocess.DEVNULL)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def evidence_kind(row: dict) -> str:
    strength = "signature ≥ 0.5" if row["signature"] >= 0.5 else "weak signature" if row["signature"] > 0 else "prose only"
    return f"{strength}, {'an error line' if row['root'] is not None else 'no error line'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/mindie-help-replay"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    by_commit: dict[str, list[str]] = defaultdict(list)
    for name, commit in MEASURED.items():
        by_commit[commit].append(name)
    rows = [row for commit, sets in by_commit.items() for row in replay(commit, sets, args.work)]
    diagnosable = sum(r["kind"] == "diagnosable" for r in rows)
    table: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        if row["answered"]:
            table[evidence_kind(row)][0 if row["helps"] else 1] += 1
    print(f"{len(rows)} reports ({diagnosable} diagnosable) on the code of their measurement")
    print(f"{'top answer rested on':42s} {'helps':>6s} {'misleads':>9s}")
    for kind, (helps, misleads) in sorted(table.items()):
        print(f"{kind:42s} {helps:6d} {misleads:9d}")
    # The answers the word-split rule (Engine._uncorroborated) withholds beyond the error-line rule: a paste with no
    # error line, resting on words alone, where the lexical and dense retrievers picked different entries.
    guessed = [r for r in rows if r["answered"] and r.get("split") and r.get("pasted") and r["root"] is None]
    print(f"{'prose only, no error line, pasted, split':42s} {sum(r['helps'] for r in guessed):6d} "
          f"{sum(r['misleads'] for r in guessed):9d}")
    helps = sum(r["helps"] for r in rows)
    misleads = sum(r["misleads"] for r in rows)
    print(f"{'all answers':42s} {helps:6d} {misleads:9d}   (helps {helps / diagnosable:.1%} of diagnosable, misleads {misleads / len(rows):.1%})")


if __name__ == "__main__":
    main()
