"""`mindie-help corpus check`: everything the loader validates, plus checks across entries."""

from __future__ import annotations

import re
from pathlib import Path

import re2
import yaml

from bot.corpus.loader import Corpus, CorpusError, Problem, load_corpus, re2_options
from bot.corpus.schema import PLACEHOLDER, Entry
from bot.engine.signatures import SignatureIndex

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
MIN_EXAMPLES = 2


def check_corpus(root: Path, facts: Path | None = None) -> tuple[Corpus | None, list[Problem]]:
    """Return the corpus (when it loads) and every problem found."""
    try:
        corpus = load_corpus(root)
    except CorpusError as exc:
        return None, exc.problems
    problems: list[Problem] = []
    index = SignatureIndex.from_corpus(corpus)
    for entry in corpus.entries:
        shown = corpus.files[entry.id]
        problems += _language_problems(entry, shown)
        problems += _signature_problems(entry, shown, index)
        problems += _placeholder_problems(entry, shown)
    if facts is not None:
        problems += _facts_problems(corpus, facts)
    return corpus, problems


def overlaps(corpus: Corpus) -> list[Problem]:
    """Signatures that also fire on another entry's example logs: not wrong in themselves (one line can have two
    causes), but the place where catch-all entries start as the corpus grows. `corpus check` prints them as
    warnings, the entries that claim most of other entries' examples first; --strict fails on them."""
    index = SignatureIndex.from_corpus(corpus)
    found: list[tuple[str, str, int]] = []
    for entry in corpus.entries:
        for i, example in enumerate(entry.example_logs):
            for other, match in index.match(example.splitlines()).items():
                if other != entry.id:
                    found.append((other, entry.id, i))
    claims: dict[str, int] = {}
    for other, _, _ in found:
        claims[other] = claims.get(other, 0) + 1
    found.sort(key=lambda f: (-claims[f[0]], f[0], f[1], f[2]))
    return [Problem(corpus.files[other], "signatures", f"also matches {owner} example {i} (this entry claims {claims[other]} "
                    f"example(s) of other entries)") for other, owner, i in found]


def _language_problems(entry: Entry, shown: str) -> list[Problem]:
    out = []
    for name in ("title", "symptom", "cause"):
        if not _CJK.search(getattr(entry, name).zh):
            out.append(Problem(shown, f"{name}.zh", "missing language: no Chinese text"))
    for i, step in enumerate(entry.fix.zh):
        if not _CJK.search(step):
            out.append(Problem(shown, f"fix.zh.{i}", "missing language: no Chinese text"))
    for name in ("title", "symptom", "cause"):
        if _CJK.search(getattr(entry, name).en) and len(_CJK.findall(getattr(entry, name).en)) > 10:
            out.append(Problem(shown, f"{name}.en", "English field is mostly Chinese"))
    return out


def _signature_problems(entry: Entry, shown: str, index: SignatureIndex) -> list[Problem]:
    out = []
    if entry.errors and not entry.signatures:
        out.append(Problem(shown, "signatures", "entry names an error message but has no signature to recognise it"))
    if entry.signatures and len(entry.examples) < MIN_EXAMPLES:
        out.append(Problem(shown, "examples", f"an entry with signatures needs at least {MIN_EXAMPLES} examples"))
    for i, example in enumerate(entry.example_logs):
        matches = index.match(example.splitlines())
        own = matches[entry.id].score if entry.id in matches else 0.0
        if own == 0.0:
            out.append(Problem(shown, f"examples.{i}", "not matched by this entry's own signatures"))
            continue
        rivals = sorted(((m.score, eid) for eid, m in matches.items() if eid != entry.id and m.score > own), reverse=True)
        if rivals:
            score, rival = rivals[0]
            out.append(Problem(shown, f"examples.{i}", f"entry '{rival}' matches it more strongly ({score:.2f} > {own:.2f})"))
    for i, error in enumerate(entry.errors):
        if entry.signatures and entry.id not in index.match([error]):
            out.append(Problem(shown, f"errors.{i}", "this error message is not matched by the entry's signatures"))
    return out


def _placeholder_problems(entry: Entry, shown: str) -> list[Problem]:
    placeholders = {name for c in entry.commands for name in PLACEHOLDER.findall(c.run)}
    out = []
    for i, sig in enumerate(entry.signatures):
        groups = re2.compile(sig.pattern, re2_options()).groupindex
        for group in groups:
            if group not in placeholders:
                out.append(Problem(shown, f"signatures.{i}.pattern", f"named group '{group}' fills no {{{group}}} placeholder in this entry's commands"))
    return out


# The FAQ names placeholders in Chinese ({MindIE安装目录}, <网卡名称>, /Service安装路径); the corpus gives them
# identifiers that a reply can explain in either language ({mindie_dir}, {ifname}, {service_dir}).
_FAQ_PLACEHOLDER = re.compile(r"\{[^{}\s$]+\}|<[^<>\s]+>|/Service安装路径")


def _template(command: str) -> str:
    return _FAQ_PLACEHOLDER.sub("{}", command)


def _facts_problems(corpus: Corpus, facts: Path) -> list[Problem]:
    """Every command faq-facts.md gives must be in the entry it belongs to, verbatim."""
    out = []
    paths = sorted(facts.glob("*.yaml")) if facts.is_dir() else [facts]
    for path in paths:
        try:
            items = yaml.safe_load(path.read_text(encoding="utf-8")) or []
        except (OSError, yaml.YAMLError) as exc:
            out.append(Problem(str(path), "", f"cannot read facts list: {exc}"))
            continue
        for item in items:
            entry = corpus.by_id.get(item.get("entry", ""))
            if entry is None:
                out.append(Problem(str(path), "entry", f"unknown entry id '{item.get('entry')}'"))
                continue
            shown = corpus.files[entry.id]
            runs = [c.run for c in entry.commands]
            if not runs and item.get("commands"):
                out.append(Problem(shown, "commands", f"fix has no commands, but faq-facts.md §{item.get('section')} gives some"))
                continue
            for command in item.get("commands", []):
                if not any(_template(command) in _template(run) for run in runs):
                    out.append(Problem(shown, "commands", f"missing the command faq-facts.md gives: {command}"))
    return out
