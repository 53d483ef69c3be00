"""The engine's output contract: what every renderer (terminal, JSON, Slack) receives."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.environment.models import EnvironmentReport

Lang = Literal["en", "zh"]
RetrieverName = Literal["signatures", "lexical", "dense"]


class Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class PlaceholderOut(Out):
    name: str
    hint: str = Field(description="what to put there, in the reply language")


class CommandOut(Out):
    run: str = Field(description="the command with the user's own values filled in; unfilled {placeholders} stay visible")
    template: str = Field(description="the command exactly as the corpus has it")
    kind: str
    explain: str
    unfilled: list[PlaceholderOut] = Field(default_factory=list, description="placeholders the log gave no value for")


class MatchedLine(Out):
    line_no: int = Field(description="1-based line number in the user's pasted text")
    text: str


class CodeOut(Out):
    code: str
    name: str
    group: str = Field(description="the module the code belongs to")
    meaning: str = Field(description="the code's meaning, or what its prefix says when no table lists it")
    entry: str | None
    system: str = Field("mindie", description="mindie | cann | acl")
    family: str | None = None
    listed: bool = Field(True, description="false when no table lists this exact code")


class FamilyOut(Out):
    """The family of problems the root error belongs to, with its first triage steps."""

    id: str
    title: str
    summary: str
    triage: list[str]
    commands: list["CommandOut"]


class Hit(Out):
    id: str
    title: str
    component: str
    score: float = Field(description="fused score, comparable within one answer")
    confidence: float = Field(ge=0.0, le=1.0)
    symptom: str
    cause: str
    fix: str = Field(description="numbered fix steps as text, in the reply language")
    fix_steps: list[str]
    commands: list[str] = Field(description="verbatim commands, filled with captured values")
    command_details: list[CommandOut]
    matched: list[str] = Field(description="the user's log lines that were recognised")
    matched_lines: list[MatchedLine]
    retrievers: list[RetrieverName] = Field(description="which retrievers found this entry")
    why: str = Field(description="a one-line explanation of the ranking")
    source: str = Field("", description="where the entry's facts come from (documents, FaultDiag entity codes)")
    source_url: str | None = Field(None, description="the official document to read, when the source names one")
    distinct: bool = Field(False, description="one of several different errors this log shows, each recognised on its own line")


class Answer(Out):
    id: str | None = None
    answered: bool
    lang: Lang
    confidence: float = Field(ge=0.0, le=1.0)
    results: list[Hit]
    suggestions: list[str] = Field(default_factory=list, description="closest topic titles when abstaining")
    closest: Hit | None = Field(None, description="when not recognised: the closest entry in full, offered as a topic to read, not as a diagnosis")
    recognised: Hit | None = Field(None, description="when not answered: the pasted error recognised by an entry whose cause varies (triage), shown as first steps, not as a diagnosis")
    candidates: list[str] = Field(default_factory=list, description="entry ids ranked first, answered or not")
    error_codes: list[CodeOut] = Field(default_factory=list)
    notices: list[str] = Field(default_factory=list, description="e.g. input truncated, dense retriever unavailable")
    retriever: str = "hybrid"
    is_log: bool = Field(False, description="the text is a pasted log or traceback rather than a question")
    root: MatchedLine | None = Field(None, description="the line taken for the root error (its innermost cause)")
    family: FamilyOut | None = Field(None, description="the family of the root error, with first triage steps")
    environment: EnvironmentReport | None = Field(None, description="versions, cards and packages found in the paste, checked against the compatibility table")

    def contract(self) -> dict:
        """The documented JSON shape for one query (extra keys are additive)."""
        return {
            "id": self.id,
            "answered": self.answered,
            "lang": self.lang,
            "confidence": self.confidence,
            "results": [
                {
                    "id": h.id,
                    "title": h.title,
                    "score": h.score,
                    "confidence": h.confidence,
                    "cause": h.cause,
                    "fix": h.fix,
                    "commands": h.commands,
                    "matched": h.matched,
                    "retrievers": h.retrievers,
                }
                for h in self.results
            ],
            "suggestions": self.suggestions,
            "closest": {"id": self.closest.id, "title": self.closest.title, "confidence": self.closest.confidence,
                        "fix": self.closest.fix, "commands": self.closest.commands} if self.closest else None,
            "recognised": {"id": self.recognised.id, "title": self.recognised.title, "confidence": self.recognised.confidence,
                           "matched": self.recognised.matched, "cause": self.recognised.cause, "fix": self.recognised.fix,
                           "commands": self.recognised.commands} if self.recognised else None,
            "error_codes": [c.model_dump() for c in self.error_codes],
            "notices": self.notices,
            "root": self.root.model_dump() if self.root else None,
            "family": self.family.model_dump() if self.family else None,
            "environment": self.environment.model_dump(mode="json") if self.environment else None,
        }


FamilyOut.model_rebuild()
