"""Run the engine of the code on PYTHONPATH over real sets and write one JSON line per report (used by
bench/replay_heldout.py, under an older commit's code: it uses only APIs every round has had).

Usage: PYTHONPATH=<checkout> MINDIE_HELP_CORPUS_DIR=<checkout>/corpus python bench/replay_dump.py OUT SET [SET ...]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from bot.engine.engine import Engine
from bot.evaluation import entry_text, has_marker, load_cases
from bot.settings import Settings


def main() -> None:
    out_path, sets = Path(sys.argv[1]), [Path(s) for s in sys.argv[2:]]
    engine = Engine.from_settings(Settings())
    texts = {e.id: entry_text(e) for e in engine.entries}
    with out_path.open("w", encoding="utf-8") as out:
        for path in sets:
            for case in load_cases(path):
                answer = engine.answer(case.query, top_k=3)
                hit = answer.results[0] if answer.results else None
                signature = re.search(r"signature ([\d.]+)", getattr(hit, "why", "") or "") if hit else None
                helps = bool(answer.answered and hit and has_marker(texts[hit.id], case.markers))
                split, pasted = word_guess(engine, case.query, hit.id if hit else None)
                out.write(json.dumps({
                    "set": path.name, "id": case.id, "kind": case.kind, "answered": answer.answered,
                    "confidence": answer.confidence, "top": hit.id if hit else None,
                    "signature": float(signature.group(1)) if signature else 0.0,
                    "root": answer.root.line_no if getattr(answer, "root", None) else None,
                    "helps": helps, "misleads": bool(answer.answered and not helps),
                    "split": split, "pasted": pasted,
                }) + "\n")


def word_guess(engine: Engine, query: str, top: str | None) -> tuple[bool | None, bool | None]:
    """(the top entry rests on words alone and the lexical and dense retrievers pick different entries, the text
    is a paste rather than a typed one-line question), read through `Engine.evidence`, which every round has had;
    (None, None) when that fails on an old commit."""
    if top is None:
        return None, None
    try:
        from bot.engine.normalize import prepare

        prepared = prepare(query, engine.settings.max_input_bytes)
        ev = engine.evidence(prepared, {"signatures", "lexical", "dense"})
        at = engine.position[top]
        agree = int(ev.lexical.argmax()) == at and int(ev.dense.argmax()) == at and float(ev.dense[at]) > 0.0
        root = ev.analysis.root
        lines = sum(1 for line in prepared.lines if line.strip())
        # Engine._pasted's test, written out: most of the commits replayed predate it.
        pasted = bool((root is not None and getattr(root, "pasted", True)) or prepared.is_log or lines >= 2)
        return bool(float(ev.signatures[at]) == 0.0 and not agree), pasted
    except Exception:  # an older engine without one of these: the replay still reports the rest
        return None, None


if __name__ == "__main__":
    main()
