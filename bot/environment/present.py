"""The Environment section as plain lines in the reply language; the terminal and Slack renderers only style them."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.environment.models import LABELS, Check, Command, EnvironmentReport, Release

TEXT: dict[str, dict[str, str]] = {
    "en": {"title": "Environment", "found": "Found", "cards": "{n} × {name}", "fits": "Fits the table",
           "missing": "Not in the paste", "collect": "Collect them with", "fix": "install", "source": "source",
           "unknown": "unknown ({values})", "brief": "`mindie-help env` lists the commands that collect them.", "sep": ", ",
           "colon": ": ", "nothing": "No environment facts (versions, npu-smi output, pip list) in this paste.",
           "only": "This looks like an environment dump, so here is what it says; paste the error as well for a diagnosis.",
           "asked": "Asked about", "release": "{name} {version} goes with {parts}"},
    "zh": {"title": "环境检查", "found": "识别到", "cards": "{n} × {name}", "fits": "与配套表一致",
           "missing": "粘贴内容中缺少", "collect": "可用以下命令收集", "fix": "安装", "source": "来源",
           "unknown": "不确定（{values}）", "brief": "`mindie-help env` 会列出收集这些信息的命令。", "sep": "、", "colon": "：",
           "nothing": "粘贴内容中没有环境信息（版本号、npu-smi 输出、pip list）。",
           "only": "这是一段环境信息，下面是检查结果；如需诊断报错，请同时粘贴报错日志。",
           "asked": "问到的版本", "release": "{name} {version} 的配套版本：{parts}"},
}
ZH_LABELS = {"chip": "芯片", "driver": "驱动", "firmware": "固件", "arch": "架构", "os": "操作系统"}
MARK = {"mismatch": "✗", "warning": "!", "unverified": "?", "ok": "✓"}
RELEASE_MARK = "="  # a row of the table, quoted for a question; shown with its source like a problem
SEVERITY_MARK = {"error": "✗", "warning": "!", "info": "·"}


@dataclass
class Problem:
    mark: str
    text: str
    fix: str | None = None
    source: str | None = None


@dataclass
class Section:
    title: str
    found: str
    problems: list[Problem] = field(default_factory=list)  # mismatches, then warnings and observations
    notes: list[Problem] = field(default_factory=list)  # unverified pairs and information
    fits: str | None = None
    missing: str | None = None
    commands: list[tuple[str, str]] = field(default_factory=list)  # (explain, command)
    intro: str | None = None


def t(lang: str, key: str, **fmt: object) -> str:
    text = TEXT.get(lang, TEXT["en"])[key]
    return text.format(**fmt) if fmt else text


def label(component: str, lang: str) -> str:
    return ZH_LABELS.get(component, LABELS[component]) if lang == "zh" else LABELS[component]


def section(report: EnvironmentReport, lang: str, brief: bool = False) -> Section:
    """brief: inside an answer to an error, name what is missing but leave the collection commands to `env`."""
    zh = lang == "zh"
    found = t(lang, "found") + t(lang, "colon") + found_line(report, lang)
    if not report.facts and not report.cards and report.releases:  # a question about releases, not a paste of the machine
        found = t(lang, "asked") + t(lang, "colon") + t(lang, "sep").join(f"{label(r.component, lang)} {r.version}" for r in report.releases)
    out = Section(title=t(lang, "title"), found=found,
                  intro=t(lang, "only") if report.only else None)
    out.notes += [release_line(r, lang) for r in report.releases]
    for check in report.checks:
        if check.verdict in ("mismatch", "warning"):
            out.problems.append(_problem(check, zh))
        elif check.verdict == "unverified":
            out.notes.append(_problem(check, zh))
    for obs in report.observations:
        item = Problem(SEVERITY_MARK[obs.severity], obs.message_zh if zh else obs.message, source=obs.source)
        (out.problems if obs.severity in ("error", "warning") else out.notes).append(item)
    fine = [_pair(c) for c in report.checks if c.verdict == "ok"]
    if fine:
        out.fits = f"{MARK['ok']} {t(lang, 'fits')}{t(lang, 'colon')}" + t(lang, "sep").join(fine)
    if report.missing:
        missing = t(lang, "missing") + t(lang, "colon") + t(lang, "sep").join(label(m, lang) for m in report.missing)
        if brief:
            out.missing = f"{missing}. {t(lang, 'brief')}" if not zh else f"{missing}。{t(lang, 'brief')}"
        else:
            out.missing = f"{missing}. {t(lang, 'collect')}:" if not zh else f"{missing}。{t(lang, 'collect')}："
            out.commands = [(c.explain_zh if zh else c.explain, c.run) for c in report.commands]
    return out


def release_line(release: Release, lang: str) -> Problem:
    parts = t(lang, "sep").join(f"{label(p.component, lang)} {p.value}" for p in release.goes_with)
    text = t(lang, "release", name=label(release.component, lang), version=release.version, parts=parts)
    return Problem(RELEASE_MARK, text, source=release.source)


def found_line(report: EnvironmentReport, lang: str) -> str:
    parts: list[str] = []
    for fact in report.facts:
        name_ = label(fact.component, lang)
        if fact.value is None:
            parts.append(f"{name_} {t(lang, 'unknown', values=' / '.join(fact.conflicting))}")
        elif fact.component == "chip":
            count = len({(c.npu, c.chip) for c in report.cards})
            name = t(lang, "cards", n=count, name=fact.value) if count > 1 else fact.value
            parts.append(f"{name} ({report.family})" if report.family else name)
        else:
            parts.append(f"{name_} {fact.value}")
    if not parts and report.cards:
        parts.append(report.cards[0].name)
    return " · ".join(parts) if parts else "-"


def _pair(check: Check) -> str:
    a, b = check.pair
    if b == "table":
        return f"{LABELS[a]} {check.values[0]}"
    return f"{LABELS[a]} {check.values[0]} ↔ {LABELS[b]} {check.values[1]}"


def _problem(check: Check, zh: bool) -> Problem:
    return Problem(MARK[check.verdict], f"{_pair(check)}: {check.message_zh if zh else check.message}",
                   fix=(check.fix_zh if zh else check.fix), source=check.source or None)


def commands_only(lang: str, commands: list[Command]) -> Section:
    """What `mindie-help env` says when given nothing, or a paste without environment facts."""
    zh = lang == "zh"
    return Section(title=t(lang, "title"), found=t(lang, "nothing"), missing=t(lang, "collect") + t(lang, "colon").strip(),
                   commands=[(c.explain_zh if zh else c.explain, c.run) for c in commands])


def plain(sec: Section, limit: int | None = None) -> str:
    """The section as plain text (Slack fallback, logs)."""
    lines = [sec.title, *([sec.intro] if sec.intro else []), sec.found]
    for item in sec.problems + sec.notes:
        lines.append(f"{item.mark} {item.text}" + (f" → {item.fix}" if item.fix else ""))
    if sec.fits:
        lines.append(sec.fits)
    if sec.missing:
        lines.append(sec.missing)
        lines += [run for _, run in sec.commands]
    text = "\n".join(lines)
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"
