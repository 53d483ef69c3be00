"""The environment check's result: what a paste says about the machine, and what fits with what.

This is part of the engine's output contract (Answer.environment); every renderer reads only these models.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Component = Literal[
    "chip", "driver", "firmware", "cann", "nnal", "torch", "torch_npu", "torchvision", "mindie", "mindie_turbo",
    "atb_models", "vllm", "vllm_ascend", "transformers", "triton_ascend", "python", "arch", "os", "glibc",
]
Verdict = Literal["ok", "mismatch", "warning", "unverified"]
Severity = Literal["error", "warning", "info"]

# The order facts are shown in: hardware first, then the stack from the bottom up.
COMPONENT_ORDER: tuple[str, ...] = (
    "chip", "driver", "firmware", "cann", "nnal", "torch", "torch_npu", "torchvision", "mindie", "mindie_turbo",
    "atb_models", "vllm", "vllm_ascend", "transformers", "triton_ascend", "python", "arch", "os", "glibc",
)

LABELS: dict[str, str] = {
    "chip": "chip", "driver": "driver", "firmware": "firmware", "cann": "CANN", "nnal": "NNAL/ATB", "torch": "torch",
    "torch_npu": "torch_npu", "torchvision": "torchvision", "mindie": "MindIE", "mindie_turbo": "MindIE Turbo",
    "atb_models": "ATB Models", "vllm": "vllm", "vllm_ascend": "vllm-ascend", "transformers": "transformers",
    "triton_ascend": "triton-ascend", "python": "Python", "arch": "arch", "os": "OS", "glibc": "glibc",
}


class Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class Fact(Out):
    component: Component
    value: str | None = Field(description="the version or name found; None when the paste gives conflicting values")
    source: str = Field(description="what it was read from: npu-smi info, pip list, ascend_toolkit_install.info, text ...")
    line_no: int = Field(description="1-based line of the paste it was read from")
    conflicting: list[str] = Field(default_factory=list, description="different values given at the same trust level")


class NpuCard(Out):
    npu: int
    chip: int = 0
    name: str
    family: str | None = Field(None, description="A2, A3, 310P, 910, 950 ... as the compatibility table names them")
    health: str | None = None
    hbm_used_mb: int | None = None
    hbm_total_mb: int | None = None
    memory_kind: Literal["HBM", "DDR"] = "HBM"
    bus_id: str | None = None
    line_no: int


class NpuProcess(Out):
    npu: int
    chip: int = 0
    pid: int
    name: str
    memory_mb: int | None = None
    line_no: int


class Check(Out):
    """One combination of two installed components held against the compatibility table."""

    pair: tuple[str, str]
    values: tuple[str, str]
    verdict: Verdict
    message: str = Field(description="what the table says about this pair, in English")
    message_zh: str
    fix: str | None = Field(None, description="what to install, when the pair does not fit")
    fix_zh: str | None = None
    source: str = Field(description="the URL of the table row that decided it")


class Observation(Out):
    """Something in the paste that explains errors by itself: a full card, an unhealthy chip, a held device."""

    kind: Literal["hbm-full", "health", "card-held", "chip-feature", "firmware", "npu-smi-error", "expected"]
    severity: Severity
    message: str
    message_zh: str
    line_no: int | None = None
    source: str | None = None


class Command(Out):
    run: str
    explain: str
    explain_zh: str


class ReleasePart(Out):
    component: Component
    value: str = Field(description="the version, or a range such as '>= 3.9, < 3.12'")


class Release(Out):
    """A release a question asked about, and what the compatibility table says goes with it."""

    component: Component
    version: str = Field(description="the release as the table writes it")
    goes_with: list[ReleasePart]
    source: str = Field(description="the URL of the table row")


class EnvironmentReport(Out):
    facts: list[Fact] = Field(default_factory=list)
    cards: list[NpuCard] = Field(default_factory=list)
    processes: list[NpuProcess] = Field(default_factory=list)
    family: str | None = Field(None, description="the NPU family the chip belongs to, e.g. Atlas A2 (910B)")
    checks: list[Check] = Field(default_factory=list, description="mismatches first, then warnings, then the rest")
    observations: list[Observation] = Field(default_factory=list)
    verdict: Verdict | Literal["unknown"] = "unknown"
    only: bool = Field(False, description="the paste is an environment dump and nothing else")
    missing: list[str] = Field(default_factory=list, description="components worth collecting that the paste lacks")
    commands: list[Command] = Field(default_factory=list, description="how to collect what is missing")
    releases: list[Release] = Field(default_factory=list, description="releases a question asked about, with the table's row for each")

    def fact(self, component: str) -> Fact | None:
        return next((f for f in self.facts if f.component == component), None)

    def value(self, component: str) -> str | None:
        found = self.fact(component)
        return found.value if found else None

    @property
    def problems(self) -> int:
        return sum(c.verdict == "mismatch" for c in self.checks) + sum(o.severity == "error" for o in self.observations)
