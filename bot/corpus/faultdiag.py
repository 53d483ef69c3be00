"""Read a site's Ascend FaultDiag knowledge file (kg-config.json, from an `ascend-fd` install or a site's own
custom file) as extra, lower-priority entries: its keyword triggers become literal signatures, its cause,
description and suggestions become the entry's text in the reply language, and its `rule` links ("this fault can
cause that one") become "may be caused by" hints on the entries they point at.

This is interoperability with a file the operator points the bot at (`MINDIE_HELP_FAULTDIAG_KG`); nothing of it is
copied into the project's own corpus.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import re2
from pydantic import ValidationError

from bot.corpus.loader import MAX_FILE_BYTES, re2_options
from bot.corpus.schema import Bilingual, BilingualSteps, Component, Entry, Signature

PACK_WEIGHT = 0.6  # below the corpus's strong signatures: a pack entry never outranks a curated one
MAX_PACK_BYTES = 20 * MAX_FILE_BYTES
MAX_TRIGGER = 500
COMPONENTS = {"CANN": Component.CANN, "NPU": Component.NPU, "MindIE": Component.SERVICE, "AI Framework": Component.FRAMEWORK}
FAMILIES = {"HCCL": "hccl", "HCCP": "hccl", "HBM": "npu-memory", "HBMC": "npu-memory", "HBMA": "npu-memory"}


class FaultDiagError(Exception):
    """The pack cannot be used; the message names the file and, where it applies, the entity."""


class Pack:
    def __init__(self, path: Path, entries: list[Entry], digest: str, skipped: list[str]):
        self.path = path
        self.entries = entries
        self.digest = digest
        self.skipped = skipped  # entities without a usable trigger, with why


def entry_id(code: str) -> str:
    slug = "".join(ch if ch.isalnum() else "-" for ch in code.lower()).strip("-")
    slug = "-".join(part for part in slug.split("-") if part)
    return ("fd-" + slug)[:64].rstrip("-")


def _texts(attribute: dict, key: str, code: str) -> tuple[str, str]:
    zh = attribute.get(f"{key}_zh")
    en = attribute.get(f"{key}_en")
    if not isinstance(zh, (str, list)) and not isinstance(en, (str, list)):
        raise FaultDiagError(f"entity '{code}': attribute has neither {key}_zh nor {key}_en")
    return en or zh, zh or en  # a custom pack is often Chinese only: show it in both languages rather than nothing


_NUMBERED = re2.compile(r"^\s*\d{1,2}\s*[.、)）]\s*")


def _steps(value: str | list) -> list[str]:
    """Suggestions as steps, without FaultDiag's own "1." numbering (the reply numbers steps itself)."""
    items = value if isinstance(value, list) else [value]
    return [_NUMBERED.sub("", str(item)).strip() for item in items if str(item).strip()]


def _signatures(triggers: object, code: str) -> list[Signature]:
    out: list[Signature] = []
    if isinstance(triggers, dict):
        items = triggers.get("in", [])
        pattern = triggers.get("regex")
        if isinstance(pattern, str):
            try:
                re2.compile(pattern, re2_options())
                out.append(Signature(pattern=pattern, weight=PACK_WEIGHT))
            except re2.error:
                pass  # a Python-only regex: the keyword triggers still apply
    else:
        raise FaultDiagError(f"entity '{code}': regex must be an object with an 'in' list")
    if not isinstance(items, list):
        raise FaultDiagError(f"entity '{code}': regex.in must be a list")
    for item in items:
        keywords = item if isinstance(item, list) else [item]
        words = [str(k) for k in keywords if isinstance(k, (str, int)) and str(k).strip()]
        if not words:
            continue
        if any(len(w) > MAX_TRIGGER for w in words):
            raise FaultDiagError(f"entity '{code}': a trigger is longer than {MAX_TRIGGER} characters")
        first, *rest = sorted(words, key=len, reverse=True)  # the longest literal is the most selective
        out.append(Signature(pattern=re2.escape(first), weight=PACK_WEIGHT, also=rest))
    return out


def load_faultdiag(path: Path, taken: set[str] | None = None) -> Pack:
    """Raise FaultDiagError (one clear message) when the file or an entity is unusable."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise FaultDiagError(f"{path}: cannot read: {exc.strerror}") from None
    if len(raw) > MAX_PACK_BYTES:
        raise FaultDiagError(f"{path}: {len(raw)} bytes; the limit is {MAX_PACK_BYTES}")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FaultDiagError(f"{path}: not a JSON knowledge file ({exc})") from None
    repository = data.get("knowledge-repository") if isinstance(data, dict) else None
    if not isinstance(repository, dict) or not repository:
        raise FaultDiagError(f"{path}: no 'knowledge-repository' object with entities")
    taken = set(taken or ())
    caused_by: dict[str, list[str]] = {}
    for code, entity in repository.items():
        for rule in (entity.get("rule") or []) if isinstance(entity, dict) else []:
            if isinstance(rule, dict) and isinstance(rule.get("dst_code"), str):
                caused_by.setdefault(rule["dst_code"], []).append(code)
    entries: list[Entry] = []
    skipped: list[str] = []
    for code, entity in repository.items():
        if not isinstance(entity, dict) or not isinstance(entity.get("attribute"), dict):
            raise FaultDiagError(f"{path}: entity '{code}': expected an object with an 'attribute' object")
        attribute = entity["attribute"]
        try:
            signatures = _signatures(entity.get("regex", {}), code)
            if not signatures:
                skipped.append(f"{code}: no keyword trigger")
                continue
            cause_en, cause_zh = _texts(attribute, "cause", code)
            desc_en, desc_zh = _texts(attribute, "description", code)
            sugg_en, sugg_zh = _texts(attribute, "suggestion", code)
        except FaultDiagError as exc:
            raise FaultDiagError(f"{path}: {exc}") from None
        steps_en, steps_zh = _steps(sugg_en), _steps(sugg_zh)
        if len(steps_en) != len(steps_zh):  # the two languages split their advice differently: keep it whole
            steps_en, steps_zh = [" ".join(steps_en)], [" ".join(steps_zh)]
        causes = [c for c in caused_by.get(code, []) if c in repository]
        if causes:
            steps_en.append("May be caused by: " + ", ".join(causes[:8]))
            steps_zh.append("可能由以下故障引起：" + ", ".join(causes[:8]))
        if not steps_en or not steps_zh:
            raise FaultDiagError(f"{path}: entity '{code}': suggestion is empty")
        eid = entry_id(code)
        if eid in taken or len(eid) < 3:
            raise FaultDiagError(f"{path}: entity '{code}': its id '{eid}' clashes with another entry")
        taken.add(eid)
        module = str(attribute.get("module") or "")
        try:
            entries.append(Entry(
                id=eid,
                component=COMPONENTS.get(str(attribute.get("component")), Component.SYSTEM),
                family=FAMILIES.get(module),
                source=f"faultdiag-pack:{path.name}#{code}",
                title=Bilingual(en=str(cause_en), zh=str(cause_zh)),
                symptom=Bilingual(en=str(desc_en), zh=str(desc_zh)),
                cause=Bilingual(en=str(desc_en), zh=str(desc_zh)),
                fix=BilingualSteps(en=steps_en, zh=steps_zh),
                signatures=signatures,
                keywords=[s.pattern for s in signatures][:10],
            ))
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(p) for p in problem["loc"])
            raise FaultDiagError(f"{path}: entity '{code}': {where}: {problem['msg']}") from None
    return Pack(path, entries, hashlib.sha256(raw).hexdigest(), skipped)
