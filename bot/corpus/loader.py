"""Read the corpus folder into validated models, collecting every problem instead of stopping at the first."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import re2
import yaml
from pydantic import BaseModel, ValidationError

from bot.corpus.compat import CompatFile, CompatTable, build_compat
from bot.corpus.schema import (
    PLACEHOLDER, Aftermath, CodeCatalogue, Entry, ErrorCodeRow, ErrorCodeTable, Family, FamilyTable, PlaceholderTable, Scope,
)

ERROR_CODES_FILE = "error-codes.yaml"
SCOPE_FILE = "scope.yaml"
FAMILIES_FILE = "families.yaml"
AFTERMATH_FILE = "aftermath.yaml"
PLACEHOLDERS_FILE = "placeholders.yaml"  # what to put in place of each {placeholder}
CATALOGUE_DIR = "codes"  # one file per vendor code system
COMPAT_DIR = "compat"  # the compatibility table; it feeds the environment check, not the search index
MAX_FILE_BYTES = 1_000_000
M = TypeVar("M", bound=BaseModel)


def re2_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 would print to stderr; we report problems ourselves
    options.max_mem = 8 << 20
    return options


@dataclass(frozen=True)
class Problem:
    file: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.path}: {self.message}" if self.path else f"{self.file}: {self.message}"


class CorpusError(Exception):
    """The corpus is invalid; str() is the operator-facing report, one problem per line."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@dataclass
class Corpus:
    root: Path
    entries: list[Entry]
    files: dict[str, str]  # entry id -> display path of its file
    codes: list[ErrorCodeRow] = field(default_factory=list)
    scope: Scope = field(default_factory=Scope)
    families: list[Family] = field(default_factory=list)
    aftermath: Aftermath | None = None
    catalogues: list[CodeCatalogue] = field(default_factory=list)
    digest: str = ""
    compat: CompatTable = field(default_factory=CompatTable)
    placeholder_hints: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> {"en": ..., "zh": ...}

    def with_entries(self, extra: list[Entry], source: str, digest: str) -> "Corpus":
        """This corpus plus entries from elsewhere (a FaultDiag pack); the digest covers both, so the dense
        index is rebuilt when either changes."""
        files = {**self.files, **{e.id: source for e in extra}}
        combined = hashlib.sha256(f"{self.digest}:{digest}".encode()).hexdigest()
        return dataclasses.replace(self, entries=self.entries + extra, files=files, digest=combined)

    def __post_init__(self) -> None:
        self.by_id = {e.id: e for e in self.entries}
        self.family_by_id = {f.id: f for f in self.families}
        self.code_by_value = {c.code: c for c in self.codes}
        self.code_by_name = {c.name: c for c in self.codes}


def _display(path: Path, root: Path) -> str:
    return f"{root.name}/{path.relative_to(root)}"


def _field_path(loc: tuple) -> str:
    return ".".join(str(part) for part in loc) or "(top level)"


def _read_yaml(path: Path, shown: str, problems: list[Problem]) -> object | None:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            problems.append(Problem(shown, "", f"file is {size} bytes; the limit is {MAX_FILE_BYTES}"))
            return None
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(Problem(shown, "", f"not UTF-8 text (byte {exc.start})"))
        return None
    except OSError as exc:
        problems.append(Problem(shown, "", f"cannot read: {exc.strerror}"))
        return None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "YAML"
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        problems.append(Problem(shown, where, f"malformed YAML: {what}"))
        return None
    if not isinstance(data, dict):
        problems.append(Problem(shown, "", "expected a mapping of fields at the top level"))
        return None
    return data


def _validation_problems(shown: str, exc: ValidationError) -> list[Problem]:
    out = []
    for err in exc.errors():
        message = err["msg"]
        if err["type"] == "extra_forbidden":
            message = "unknown field (not in the schema)"
        elif err["type"] == "missing":
            message = "required field is missing"
        out.append(Problem(shown, _field_path(err["loc"]), message))
    return out


def _validated(model: type[M], data: object, shown: str, problems: list[Problem]) -> M | None:
    """The file's data as `model`, or None with every validation problem reported against the file."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems.extend(_validation_problems(shown, exc))
        return None


def _pattern_problem(pattern: str) -> str | None:
    try:
        compiled = re2.compile(pattern, re2_options())
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        return f"regex does not compile under RE2: {detail}"
    if compiled.search("") is not None:
        return "regex matches an empty line, so it would match every log"
    return None


def _check_patterns(entry: Entry, shown: str, problems: list[Problem]) -> None:
    for i, sig in enumerate(entry.signatures):
        if (message := _pattern_problem(sig.pattern)) is not None:
            problems.append(Problem(shown, f"signatures.{i}.pattern", message))
        for j, pattern in enumerate(sig.context):
            if (message := _pattern_problem(pattern)) is not None:
                problems.append(Problem(shown, f"signatures.{i}.context.{j}", message))


def _family_problems(table: FamilyTable, shown: str) -> list[Problem]:
    return [
        Problem(shown, f"families.{i}.{kind}.{j}", message)
        for i, family in enumerate(table.families)
        for kind in ("detect", "mentions")
        for j, pattern in enumerate(getattr(family, kind))
        if (message := _pattern_problem(pattern)) is not None
    ]


def _scope_problems(scope: Scope, shown: str) -> list[Problem]:
    return [
        Problem(shown, f"{kind}.{i}.pattern", message)
        for kind in ("foreign", "domain")
        for i, rule in enumerate(getattr(scope, kind))
        if (message := _pattern_problem(rule.pattern)) is not None
    ]


def load_corpus(root: Path) -> Corpus:
    """Load and validate every YAML file under root; raise CorpusError listing all problems."""
    root = Path(root)
    problems: list[Problem] = []
    if not root.is_dir():
        raise CorpusError([Problem(str(root), "", "corpus folder does not exist")])
    entries: list[Entry] = []
    files: dict[str, str] = {}
    codes: list[ErrorCodeRow] = []
    scope = Scope()
    families: list[Family] = []
    aftermath: Aftermath | None = None
    catalogues: list[tuple[str, CodeCatalogue]] = []
    compat_files: list[tuple[str, CompatFile]] = []
    hints: dict[str, dict[str, str]] = {}
    hints_file: str | None = None
    digest = hashlib.sha256()
    paths = sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
    for path in paths:
        shown = _display(path, root)
        if path.parent.name == COMPAT_DIR and path.parent.parent == root:
            # kept out of the digest: editing the table must not force a rebuild of the search index
            if (data := _read_yaml(path, shown, problems)) is not None:
                if (table := _validated(CompatFile, data, shown, problems)) is not None:
                    compat_files.append((shown, table))
            continue
        try:
            digest.update(shown.encode() + b"\0" + path.read_bytes() + b"\0")
        except OSError:
            pass
        data = _read_yaml(path, shown, problems)
        if data is None:
            continue
        if path.name == ERROR_CODES_FILE:
            if (code_table := _validated(ErrorCodeTable, data, shown, problems)) is not None:
                codes = list(code_table.codes)
            continue
        if path.parent.name == CATALOGUE_DIR and path.parent.parent == root:
            if (catalogue := _validated(CodeCatalogue, data, shown, problems)) is not None:
                catalogues.append((shown, catalogue))
            continue
        if path.name == FAMILIES_FILE and path.parent == root:
            if (family_table := _validated(FamilyTable, data, shown, problems)) is not None:
                families = list(family_table.families)
                problems.extend(_family_problems(family_table, shown))
            continue
        if path.name == AFTERMATH_FILE and path.parent == root:
            if (aftermath := _validated(Aftermath, data, shown, problems)) is not None:
                problems.extend(Problem(shown, f"consequences.{i}.pattern", message)
                                for i, rule in enumerate(aftermath.consequences)
                                if (message := _pattern_problem(rule.pattern)) is not None)
            continue
        if path.name == PLACEHOLDERS_FILE and path.parent == root:
            if (hint_table := _validated(PlaceholderTable, data, shown, problems)) is not None:
                hints = {h.name: {"en": h.hint.en, "zh": h.hint.zh} for h in hint_table.placeholders}
                hints_file = shown
            continue
        if path.name == SCOPE_FILE:
            if (read_scope := _validated(Scope, data, shown, problems)) is not None:
                scope = read_scope
                problems.extend(_scope_problems(scope, shown))
            continue
        if (entry := _validated(Entry, data, shown, problems)) is None:
            continue
        if entry.id in files:
            problems.append(Problem(shown, "id", f"duplicate id '{entry.id}' (also in {files[entry.id]})"))
            continue
        _check_patterns(entry, shown, problems)
        files[entry.id] = shown
        entries.append(entry)
    if not entries and not problems:
        problems.append(Problem(_display(root, root.parent), "", "no entries found (*.yaml)"))
    _check_references(entries, files, codes, root, problems)
    _check_families(entries, files, families, catalogues, root, problems)
    if hints_file is not None:
        _check_placeholders(entries, files, families, hints, hints_file, problems)
    compat, compat_problems = build_compat(compat_files)
    problems.extend(Problem(*problem) for problem in compat_problems)
    if problems:
        raise CorpusError(problems)
    return Corpus(root=root, entries=entries, files=files, codes=codes, scope=scope, families=families, aftermath=aftermath,
                  catalogues=[c for _, c in catalogues], digest=digest.hexdigest(), compat=compat, placeholder_hints=hints)


def _check_placeholders(entries: list[Entry], files: dict[str, str], families: list[Family], hints: dict[str, dict[str, str]],
                        hints_file: str, problems: list[Problem]) -> None:
    """Every {placeholder} a command uses needs a hint: a reply must be able to say what to put there."""
    for entry in entries:
        for i, command in enumerate(entry.commands):
            for name in PLACEHOLDER.findall(command.run):
                if name not in hints:
                    problems.append(Problem(files[entry.id], f"commands.{i}.run", f"placeholder {{{name}}} has no hint in {hints_file}"))
    for family in families:
        for i, command in enumerate(family.commands):
            for name in PLACEHOLDER.findall(command.run):
                if name not in hints:
                    problems.append(Problem(f"families.yaml ({family.id})", f"commands.{i}.run", f"placeholder {{{name}}} has no hint in {hints_file}"))


def _check_families(entries: list[Entry], files: dict[str, str], families: list[Family],
                    catalogues: list[tuple[str, CodeCatalogue]], root: Path, problems: list[Problem]) -> None:
    """Every family an entry or a code names exists; every code an entry is named for exists; no code twice."""
    family_ids = {f.id for f in families}
    shown_families = f"{root.name}/{FAMILIES_FILE}"
    if len(family_ids) != len(families):
        problems.append(Problem(shown_families, "families", "a family id is listed twice"))
    for entry in entries:
        if entry.family is not None and entry.family not in family_ids:
            problems.append(Problem(files[entry.id], "family", f"unknown family '{entry.family}' (see {shown_families})"))
    known = set(files)
    seen: dict[str, str] = {}
    for shown, catalogue in catalogues:
        for i, prefix in enumerate(catalogue.prefixes):
            if prefix.family is not None and prefix.family not in family_ids:
                problems.append(Problem(shown, f"prefixes.{i}.family", f"unknown family '{prefix.family}'"))
        for i, row in enumerate(catalogue.codes):
            key = f"{catalogue.system}:{row.code.upper()}"
            if key in seen:
                problems.append(Problem(shown, f"codes.{i}.code", f"duplicate code '{row.code}' (also in {seen[key]})"))
            seen[key] = shown
            if row.family is not None and row.family not in family_ids:
                problems.append(Problem(shown, f"codes.{i}.family", f"unknown family '{row.family}'"))
            if row.entry is not None and row.entry not in known:
                problems.append(Problem(shown, f"codes.{i}.entry", f"unknown entry id '{row.entry}'"))


def _check_references(entries: list[Entry], files: dict[str, str], codes: list[ErrorCodeRow], root: Path, problems: list[Problem]) -> None:
    known = set(files)
    for entry in entries:
        for i, rel in enumerate(entry.related):
            if rel not in known:
                problems.append(Problem(files[entry.id], f"related.{i}", f"unknown entry id '{rel}'"))
            if rel == entry.id:
                problems.append(Problem(files[entry.id], f"related.{i}", "an entry cannot be related to itself"))
    shown = f"{root.name}/{ERROR_CODES_FILE}"
    seen: set[str] = set()
    for i, row in enumerate(codes):
        if row.code in seen:
            problems.append(Problem(shown, f"codes.{i}.code", f"duplicate code '{row.code}'"))
        seen.add(row.code)
        if row.entry is not None and row.entry not in known:
            problems.append(Problem(shown, f"codes.{i}.entry", f"unknown entry id '{row.entry}'"))
