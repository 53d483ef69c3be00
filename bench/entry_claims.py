"""What an entry claims on the real reports: run before merging a new or widened entry.

Usage: .venv/bin/python bench/entry_claims.py ENTRY_ID [ENTRY_ID ...] [--sets eval/realworld*.jsonl]

An entry is written for one or two reports, but its prose, keywords and signatures answer every paste that
resembles them. This lists every real report (all `eval/realworld*.jsonl` by default, held-out sets included:
read the list, do not tune on a set that is still to be measured) where one of the entries is the answer or a
runner-up, and whether that is right by the thread's own markers. Wrong answers to reports the entry was not
written for are the catch-all words to cut before the entry is merged.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bot.engine.engine import Engine  # noqa: E402
from bot.evaluation import entry_text, has_marker, load_cases  # noqa: E402
from bot.settings import Settings  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("entries", nargs="+", help="entry ids to look at")
    parser.add_argument("--sets", nargs="*", type=Path, default=sorted((ROOT / "eval").glob("realworld*.jsonl")))
    args = parser.parse_args()
    engine = Engine.from_settings(Settings())
    unknown = [e for e in args.entries if e not in engine.position]
    if unknown:
        sys.exit(f"unknown entry id(s): {', '.join(unknown)}")
    wanted = set(args.entries)
    texts = {e.id: entry_text(e) for e in engine.entries}
    right = wrong = 0
    print(f"{'report':9} {'set':28} {'kind':13} {'entry':40} {'rank':>4} {'conf':>5}  verdict")
    for path in args.sets:
        for case in load_cases(path):
            answer = engine.answer(case.query, top_k=3)
            ranked = answer.results if answer.answered else []
            for rank, hit in enumerate(ranked, 1):
                if hit.id not in wanted:
                    continue
                fits = case.kind == "diagnosable" and has_marker(texts[hit.id], case.markers)
                if rank == 1:
                    right += fits
                    wrong += not fits
                verdict = "right" if fits else ("MISLEADS" if rank == 1 else "runner-up, no marker")
                print(f"{case.id:9} {path.name[:28]:28} {case.kind:13} {hit.id[:40]:40} {rank:>4} {answer.confidence:5.2f}  {verdict}")
    print(f"\nanswered first: {right} right, {wrong} misleading")


if __name__ == "__main__":
    main()
