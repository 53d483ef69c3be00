"""Run every parser over a paste and settle on one value per component.

Rules that keep a wrong version out of the answer:
  - a value must look like that component's versions (a driver is 2x.y, CANN 5-9.x, torch 1-2.x ...);
  - tool output beats typed text, typed text beats image tags and file names;
  - two different values at the same trust level leave the component unknown, and both are shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.environment.models import Fact, NpuCard, NpuProcess
from bot.environment.parsers import MAX_LINE, TOOL, Parsed, RawFact, Signal, ascend_files, informal, npu_smi, packages, system
from bot.environment.versions import Version, parse_version, python_series

# Environment output sits at the top of a report (issue templates, collect_env) or at its end (a dump pasted
# under a log); a 1 MB log is not scanned whole, so the check stays a few percent of an answer's time.
HEAD_LINES, TAIL_LINES = 2_000, 500

# (lowest, highest) leading number a component's versions can have.
_MAJOR: dict[str, tuple[int, int]] = {
    "driver": (20, 40), "firmware": (1, 40), "cann": (5, 12), "nnal": (5, 12), "torch": (1, 3), "torch_npu": (1, 3),
    "torchvision": (0, 1), "mindie": (1, 5), "mindie_turbo": (1, 5), "atb_models": (1, 12), "vllm": (0, 1),
    "vllm_ascend": (0, 1), "transformers": (4, 6), "triton_ascend": (2, 4), "glibc": (2, 2),
}
_TEXT_COMPONENTS = ("chip", "arch", "os")


@dataclass
class Extracted:
    facts: list[Fact] = field(default_factory=list)
    cards: list[NpuCard] = field(default_factory=list)
    processes: list[NpuProcess] = field(default_factory=list)
    signals: list[Signal] = field(default_factory=list)
    coverage: float = 0.0  # share of the paste's non-blank lines that are environment output
    environment_lines: int = 0  # how many lines are environment output
    lines: list[str] = field(default_factory=list)

    def value(self, component: str) -> str | None:
        return next((f.value for f in self.facts if f.component == component), None)

    def version(self, component: str) -> Version | None:
        return parse_version(self.value(component))


def extract(text: str) -> Extracted:
    lines = text.splitlines()
    if len(lines) > HEAD_LINES + TAIL_LINES:
        lines = lines[:HEAD_LINES] + lines[-TAIL_LINES:]
    parsed = Parsed()
    for parser in (npu_smi.parse, packages.parse, ascend_files.parse, system.parse, informal.parse):
        parsed.merge(parser(lines))
    for card in {c.name: c for c in reversed(parsed.cards)}.values():  # one chip fact per distinct chip name
        parsed.facts.append(RawFact("chip", card.name, "npu-smi info", card.line_no - 1, TOOL))
    facts = settle(parsed.facts)
    blank = sum(1 for line in lines if not line.strip() or len(line) > MAX_LINE)
    used = {f.line for f in parsed.facts} | parsed.consumed
    coverage = len(used) / max(1, len(lines) - blank)
    return Extracted(facts=facts, cards=parsed.cards, processes=parsed.processes, signals=parsed.signals,
                     coverage=min(1.0, coverage), environment_lines=len(used), lines=lines)


def plausible(component: str, value: str) -> str | None:
    """The value in its display spelling when it can be this component's version, else None."""
    if component in _TEXT_COMPONENTS:
        return value.strip()[:80] or None
    if component == "python":
        return python_version(value)
    version = parse_version(value)
    if version is None or not version.numbers:
        return None
    low, high = _MAJOR.get(component, (0, 10_000))
    if not low <= version.numbers[0] <= high:
        return None
    if component in ("cann", "mindie", "nnal") and len(version.key) < 2:
        return None  # "CANN 8" says too little to check anything
    return version.text


def python_version(value: str) -> str | None:
    series = python_series(value)
    if series is None:
        return None
    version = parse_version(value)
    return version.text if version is not None and len(version.numbers) <= 3 else series


def settle(raw: list[RawFact]) -> list[Fact]:
    by_component: dict[str, list[tuple[RawFact, str]]] = {}
    for fact in raw:
        value = plausible(fact.component, fact.value)
        if value is not None:
            by_component.setdefault(fact.component, []).append((fact, value))
    out: list[Fact] = []
    for component, found in by_component.items():
        top = max(f.trust for f, _ in found)
        best = [(f, v) for f, v in found if f.trust == top]
        values = _distinct(component, [v for _, v in best])
        first = best[0][0]
        if len(values) == 1:
            out.append(Fact(component=component, value=values[0], source=first.source, line_no=first.line + 1))
        else:
            out.append(Fact(component=component, value=None, source=first.source, line_no=first.line + 1, conflicting=values[:4]))
    return out


def _distinct(component: str, values: list[str]) -> list[str]:
    """Values that really differ: 2.1 and 2.1.0 are one torch; 910B3 twice is one chip; a chip named by its
    Atlas product and by its chip name is settled later by the checker, so keep the most specific name."""
    kept: list[str] = []
    for value in values:
        if component in _TEXT_COMPONENTS:
            if component == "chip":
                if any(_same_chip(value, k) for k in kept):
                    continue
            elif value.lower() in (k.lower() for k in kept):
                continue
            kept.append(value)
            continue
        version = parse_version(value)
        if version is not None and any(version == parse_version(k) for k in kept):
            # keep the longer spelling (2.1.0 rather than 2.1): it says more
            kept = [value if (parse_version(k) == version and len(value) > len(k)) else k for k in kept]
            continue
        kept.append(value)
    if component == "chip" and len(kept) > 1:
        specific = [k for k in kept if not k.lower().startswith("atlas")]
        if len(specific) == 1:
            return specific
    return kept


def _same_chip(a: str, b: str) -> bool:
    def norm(x: str) -> str:
        return x.lower().replace("ascend", "").replace(" ", "")
    return norm(a) == norm(b) or norm(a).startswith(norm(b)) or norm(b).startswith(norm(a))
