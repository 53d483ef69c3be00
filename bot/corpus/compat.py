"""The compatibility table (corpus/compat/*.yaml): which MindIE, CANN, driver, torch, torch_npu, Python, vllm and
vllm-ascend releases go together, and what each NPU family supports. Every row cites where it comes from.

Validated at the boundary like the rest of the corpus: an unknown field, a value that is not a version or a row
without a source is reported as `corpus/compat/FILE.yaml: mindie.3.cann.0: ...` by `mindie-help corpus check`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

import re2
from pydantic import AfterValidator, Field, StringConstraints, model_validator

from bot.corpus.schema import NonEmpty, Strict
from bot.environment.versions import Version, parse_version, python_series


def _version(value: str) -> str:
    if parse_version(value) is None:
        raise ValueError(f"'{value}' is not a version (expected e.g. 8.0.RC3, 2.5.1.post1, 24.1.rc2)")
    return value


def _python(value: str) -> str:
    if python_series(value) != value:
        raise ValueError(f"'{value}' is not a Python series (expected e.g. 3.10)")
    return value


VersionText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1), AfterValidator(_version)]
PythonSeries = Annotated[str, StringConstraints(strip_whitespace=True), AfterValidator(_python)]
# A row cites a public page, or the FAQ section the corpus was written from ("faq#31").
Citation = Annotated[str, StringConstraints(pattern=r"^(?:https://\S+|faq#\d+)$")]
Support = Literal["supported", "experimental", "unsupported"]
Product = Literal["mindie", "vllm_ascend"]


class CannRow(Strict):
    cann: VersionText
    driver_min: VersionText | None = Field(None, description="oldest Ascend HDK the release notes list as compatible")
    driver_paired: VersionText | None = Field(None, description="the HDK released with this CANN")
    source: Citation
    sources: list[Citation] = Field(default_factory=list)
    note: NonEmpty | None = None

    @model_validator(mode="after")
    def _has_driver(self) -> "CannRow":
        if self.driver_min is None and self.driver_paired is None:
            raise ValueError("give driver_min or driver_paired (or leave this CANN out of the table)")
        return self


class TorchNpuRow(Strict):
    torch_npu: VersionText
    torch: VersionText
    cann: VersionText
    pta: VersionText = Field(description="Ascend Extension for PyTorch release the wheel belongs to")
    source: Citation


class PtaRange(Strict):
    pta: VersionText
    cann_min: VersionText
    cann_max: VersionText | None = None
    source: Citation


class TorchPythonRow(Strict):
    torch: VersionText
    python: list[PythonSeries] = Field(min_length=1)
    source: Citation


class MindieRow(Strict):
    mindie: VersionText
    cann: list[VersionText] = Field(min_length=1)
    pta: list[VersionText] = Field(default_factory=list)
    torch: list[VersionText] = Field(default_factory=list)
    python: list[PythonSeries] = Field(default_factory=list)
    driver_min: VersionText | None = None
    glibc_min: VersionText | None = None
    released: NonEmpty | None = None
    source: Citation
    sources: list[Citation] = Field(default_factory=list)
    note: NonEmpty | None = None


class DriverFloor(Strict):
    product: Product
    driver_min: VersionText
    recommended: VersionText | None = None
    source: Citation


class VllmAscendRow(Strict):
    vllm_ascend: VersionText
    vllm: list[VersionText] = Field(min_length=1)
    python_min: PythonSeries
    python_below: PythonSeries
    cann: VersionText
    torch: VersionText
    torch_npu: VersionText
    triton_ascend: VersionText | None = None
    released: NonEmpty | None = None
    source: Citation


class Feature(Strict):
    """Something a chip lacks, and the words in a paste that ask for it."""

    id: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{1,31}$")]
    asks: NonEmpty = Field(description="RE2 regex searched in the whole paste")
    en: NonEmpty
    zh: NonEmpty
    source: Citation


class ChipFamily(Strict):
    id: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9]{2,8}$")]
    title: NonEmpty
    names: list[NonEmpty] = Field(min_length=1, description="RE2 regexes matched against a chip name")
    products: dict[Product, Support] = Field(default_factory=dict)
    lacks: list[Feature] = Field(default_factory=list)
    source: Citation
    sources: list[Citation] = Field(default_factory=list)


class CompatFile(Strict):
    cann: list[CannRow] = Field(default_factory=list)
    torch_npu: list[TorchNpuRow] = Field(default_factory=list)
    pta: list[PtaRange] = Field(default_factory=list)
    torch_python: list[TorchPythonRow] = Field(default_factory=list)
    mindie: list[MindieRow] = Field(default_factory=list)
    driver_floors: list[DriverFloor] = Field(default_factory=list)
    vllm_ascend: list[VllmAscendRow] = Field(default_factory=list)
    chips: list[ChipFamily] = Field(default_factory=list)


@dataclass
class CompatTable:
    """Every compat file merged, with the look-ups the checker needs."""

    cann: list[CannRow] = field(default_factory=list)
    torch_npu: list[TorchNpuRow] = field(default_factory=list)
    pta: list[PtaRange] = field(default_factory=list)
    torch_python: list[TorchPythonRow] = field(default_factory=list)
    mindie: list[MindieRow] = field(default_factory=list)
    driver_floors: list[DriverFloor] = field(default_factory=list)
    vllm_ascend: list[VllmAscendRow] = field(default_factory=list)
    chips: list[ChipFamily] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._chip_patterns = [(family, [re2.compile(p) for p in family.names]) for family in self.chips]
        self._feature_patterns = {(family.id, f.id): re2.compile(f.asks) for family in self.chips for f in family.lacks}

    @property
    def rows(self) -> int:
        return sum(len(getattr(self, name)) for name in CompatFile.model_fields)

    def find(self, rows: list, key: str, version: Version | None) -> list:
        """Rows whose `key` is this version (2.1.0rc1 finds 2.1.0.rc1)."""
        if version is None:
            return []
        return [row for row in rows if parse_version(getattr(row, key)) == version]

    def cann_row(self, version: Version | None) -> CannRow | None:
        if version is None:
            return None
        return next((row for row in self.cann if parse_version(row.cann).same_series(version)), None)

    def pta_range(self, pta: str) -> PtaRange | None:
        wanted = parse_version(pta)
        return next((row for row in self.pta if parse_version(row.pta) == wanted), None)

    def python_for_torch(self, torch: Version | None) -> TorchPythonRow | None:
        if torch is None:
            return None
        return next((row for row in self.torch_python if parse_version(row.torch).base() == torch.base()), None)

    def family(self, chip_name: str) -> ChipFamily | None:
        name = " ".join(chip_name.split())
        for family, patterns in self._chip_patterns:
            if any(p.search(name) for p in patterns):
                return family
        return None

    def family_by_id(self, family_id: str) -> ChipFamily | None:
        return next((f for f in self.chips if f.id == family_id), None)

    def asks_for(self, family: ChipFamily, feature: Feature, text: str) -> bool:
        return self._feature_patterns[(family.id, feature.id)].search(text) is not None


def build_compat(files: list[tuple[str, CompatFile]]) -> tuple[CompatTable, list[tuple[str, str, str]]]:
    """Merge the files; report (file, field path, message) for duplicates and regexes RE2 refuses."""
    from bot.corpus.loader import _pattern_problem  # the same RE2 rules as signatures

    problems: list[tuple[str, str, str]] = []
    merged = CompatTable.__new__(CompatTable)
    for name in CompatFile.model_fields:
        setattr(merged, name, [])
    keys = {"cann": "cann", "torch_npu": "torch_npu", "pta": "pta", "torch_python": "torch", "mindie": "mindie",
            "vllm_ascend": "vllm_ascend", "chips": "id", "driver_floors": "product"}
    seen: dict[tuple[str, str], str] = {}
    for shown, compat in files:
        for name, key in keys.items():
            for i, row in enumerate(getattr(compat, name)):
                value = getattr(row, key)
                normal = str(parse_version(value) or value) if name not in ("chips", "driver_floors") else value
                if (name, normal) in seen:
                    problems.append((shown, f"{name}.{i}.{key}", f"duplicate {key} '{value}' (also in {seen[(name, normal)]})"))
                    continue
                seen[(name, normal)] = shown
                getattr(merged, name).append(row)
        for i, family in enumerate(compat.chips):
            for j, pattern in enumerate(family.names):
                if (message := _pattern_problem(pattern)) is not None:
                    problems.append((shown, f"chips.{i}.names.{j}", message))
            for j, feature in enumerate(family.lacks):
                if (message := _pattern_problem(feature.asks)) is not None:
                    problems.append((shown, f"chips.{i}.lacks.{j}.asks", message))
    if problems:
        return CompatTable(), problems
    merged.__post_init__()
    return merged, problems
