"""The corpus schema: one YAML file per problem, validated strictly at the boundary."""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
EntryId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{2,63}$")]
ErrorCode = Annotated[str, StringConstraints(pattern=r"^MIE\d{2}[EWI][0-9A-F]{6,7}$")]

# A placeholder is `{name}` with an identifier inside; JSON such as `{"type": ...}` is not one.
PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")  # ${VAR} is shell, not a placeholder


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class Component(str, Enum):
    SERVICE = "Service"
    LLM = "LLM"
    ATB = "ATB"
    MOTOR_PD = "Motor/PD"
    MULTIMODAL = "Multimodal"
    INSTALL = "Install"
    CANN = "CANN"
    HCCL = "HCCL"
    NPU = "NPU/Driver"
    FRAMEWORK = "PyTorch/torch_npu"
    VLLM_ASCEND = "vllm-ascend"
    SYSTEM = "System"  # host OS, servers, switches, cluster software


class Bilingual(Strict):
    en: NonEmpty
    zh: NonEmpty

    def get(self, lang: str) -> str:
        return self.zh if lang == "zh" else self.en


class BilingualSteps(Strict):
    en: list[NonEmpty] = Field(min_length=1)
    zh: list[NonEmpty] = Field(min_length=1)

    @model_validator(mode="after")
    def _same_length(self) -> "BilingualSteps":
        if len(self.en) != len(self.zh):
            raise ValueError(f"en has {len(self.en)} steps but zh has {len(self.zh)}; translate every step")
        return self

    def get(self, lang: str) -> list[str]:
        return self.zh if lang == "zh" else self.en


class BilingualPhrases(Strict):
    """Free-form phrasings (how users ask); the two lists need not align."""

    en: list[NonEmpty] = Field(default_factory=list)
    zh: list[NonEmpty] = Field(default_factory=list)


class Command(Strict):
    run: NonEmpty = Field(description="verbatim command, env var, config key/value, path or snippet")
    kind: Literal["shell", "env", "config", "path", "code", "url"]
    explain: Bilingual

    @property
    def placeholders(self) -> list[str]:
        return PLACEHOLDER.findall(self.run)


class Signature(Strict):
    pattern: NonEmpty = Field(description="RE2 regex searched in each log line")
    weight: float = Field(default=1.0, gt=0.0, le=1.0)
    # A consequence (e.g. "TBE ... main process disappeared", "Start mindie server fail") follows some other
    # failure: it is recognised, but it cannot outrank an earlier error line that nothing recognised.
    role: Literal["root", "consequence"] = "root"
    # Literal texts that must all be on the same line too (FaultDiag's "all of these keywords" triggers).
    also: list[NonEmpty] = Field(default_factory=list)
    # RE2 patterns that must each match somewhere in the whole paste: a line that means one thing on any card and
    # another on a chip the paste names (an operator failure on a 300I Duo is most often an operator it lacks).
    context: list[NonEmpty] = Field(default_factory=list)


HttpsUrl = Annotated[str, StringConstraints(pattern=r"^https://\S+$")]


class Example(Strict):
    """A log as a real user pasted it, with the public thread it comes from."""

    log: NonEmpty
    url: HttpsUrl


class Entry(Strict):
    id: EntryId
    component: Component
    source: NonEmpty = Field(description="where the facts come from, e.g. 'faq#7'")
    title: Bilingual
    symptom: Bilingual
    cause: Bilingual
    fix: BilingualSteps
    commands: list[Command] = Field(default_factory=list)
    errors: list[NonEmpty] = Field(default_factory=list, description="exact error messages, verbatim")
    signatures: list[Signature] = Field(default_factory=list)
    examples: list[NonEmpty | Example] = Field(default_factory=list)
    family: EntryId | None = Field(None, description="triage family id from families.yaml")
    questions: BilingualPhrases = Field(default_factory=BilingualPhrases)
    keywords: list[NonEmpty] = Field(default_factory=list)
    related: list[EntryId] = Field(default_factory=list)
    # "general": the problem is not Ascend's own (a small /dev/shm, an extension built for another torch): the
    # entry answers only when the paste shows it comes from an Ascend / MindIE setup.
    scope: Literal["ascend", "general"] = "ascend"
    # "triage": the error line names a symptom that many causes share (an AI Core exception, a collective that
    # timed out, a wrapper's return code); the line alone cannot say which. On a pasted report the entry is
    # shown as the recognised error with its first steps, never as the diagnosis of its cause.
    triage: bool = False

    @property
    def example_logs(self) -> list[str]:
        return [e.log if isinstance(e, Example) else e for e in self.examples]

    @property
    def real_examples(self) -> list[Example]:
        return [e for e in self.examples if isinstance(e, Example)]

    @field_validator("related")
    @classmethod
    def _no_self_dupes(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("related lists an id twice")
        return value


class ErrorCodeRow(Strict):
    code: ErrorCode
    name: Annotated[str, StringConstraints(pattern=r"^[A-Z][A-Z0-9_]+$")]
    group: NonEmpty
    entry: EntryId | None = None
    meaning: Bilingual
    aliases: list[NonEmpty] = Field(default_factory=list, description="other texts that stand for this code in logs")


class ErrorCodeTable(Strict):
    codes: list[ErrorCodeRow] = Field(min_length=1)


class ScopeRule(Strict):
    label: NonEmpty
    pattern: NonEmpty = Field(description="RE2 regex searched in the whole query")
    # Domain rules: a weak marker (the bare word "NPU", which Intel, AMD and others use too) is outweighed by a
    # foreign rule marked `outweighs_weak` (another vendor's NPU stack); a strong one (Ascend, CANN, MindIE...)
    # outweighs every foreign marker. CUDA words do not outweigh "NPU": code ported from CUDA says "cuda" on Ascend.
    weak: bool = False
    outweighs_weak: bool = False


class Scope(Strict):
    """What marks a query as another stack's problem (foreign) or as MindIE's own (domain)."""

    foreign: list[ScopeRule] = Field(default_factory=list)
    domain: list[ScopeRule] = Field(default_factory=list)


class Aftermath(Strict):
    """Lines that only ever follow another failure (a worker dying, a launcher giving up): never the root error."""

    consequences: list[ScopeRule] = Field(min_length=1)


class Family(Strict):
    """A family of problems (HCCL, device visibility, ...): how to recognise it and its first triage steps,
    used when the exact error is not in the knowledge base."""

    id: EntryId
    title: Bilingual
    summary: Bilingual = Field(description="what errors of this family usually mean, one or two sentences")
    detect: list[NonEmpty] = Field(min_length=1, description="RE2 regexes; a line matching one belongs to the family")
    mentions: list[NonEmpty] = Field(
        default_factory=list,
        description="RE2 regexes for how people describe the problem in their own words ('310P 不支持', '返回乱码'); read "
        "over the whole paste, with `detect`, only for a not-recognised reply whose error lines named no family")
    triage: BilingualSteps
    commands: list[Command] = Field(default_factory=list)
    source: NonEmpty


class FamilyTable(Strict):
    families: list[Family] = Field(min_length=1)


class PlaceholderHint(Strict):
    """What the user should put in place of a command's {placeholder} when their log did not say it."""

    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
    hint: Bilingual


class PlaceholderTable(Strict):
    placeholders: list[PlaceholderHint] = Field(min_length=1)


CatalogueSystem = Literal["mindie", "cann", "acl"]


class CodePrefix(Strict):
    """What a code's leading characters say when the code itself is not catalogued (MIE04 = MindIE Server)."""

    prefix: NonEmpty
    module: Bilingual
    family: EntryId | None = None


class CatalogueCode(Strict):
    code: NonEmpty
    name: str | None = None
    module: NonEmpty
    family: EntryId | None = None
    entry: EntryId | None = None
    meaning: Bilingual
    source: NonEmpty


class CodeCatalogue(Strict):
    """One vendor code system (MindIE MIE0x, CANN E[A-Z]dddd, ACL return codes) as data."""

    system: CatalogueSystem
    title: Bilingual
    source: NonEmpty
    prefixes: list[CodePrefix] = Field(default_factory=list)
    codes: list[CatalogueCode] = Field(default_factory=list)
