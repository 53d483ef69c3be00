"""Terminal rendering: readable, and every command on a line of its own with nothing around it, so it copies as is."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape as _markup_escape
from rich.rule import Rule

from bot.engine.models import Answer, CommandOut, Hit
from bot.engine.normalize import strip_control
from bot.environment.present import section as environment_section
from bot.render.environment import print_section


def escape(text: str) -> str:
    """Rich markup escaped, and no control character or escape sequence left (quoted log lines are the user's)."""
    return _markup_escape(strip_control(text))

LABELS = {
    "en": {"no_match": "No confident match.", "not_recognised": "Not recognised: this error is not in the knowledge base.", "closest": "Closest topics", "cause": "Cause",
           "fix": "Fix", "commands": "Commands", "seen": "Recognised in your log", "codes": "Error code",
           "confidence": "confidence", "root": "Root error (line {n})", "family": "Looks like", "triage": "First steps",
           "ask": "Still stuck? Ask a human in the support channel with the full log.",
           "recognised": "Recognised, cause not determined: {title}",
           "recognised_note": "This error has several possible causes and the paste does not show which one; these are first steps to find it, not a fix."},
    "zh": {"no_match": "没有足够把握的匹配。", "not_recognised": "未识别：知识库中没有这个报错。", "closest": "最接近的主题", "cause": "原因", "fix": "解决步骤",
           "commands": "命令", "seen": "识别到的日志行", "codes": "错误码", "confidence": "置信度",
           "root": "根因报错（第 {n} 行）", "family": "问题类别", "triage": "先做这几步", "ask": "仍未解决？请带上完整日志在支持频道求助人工。",
           "recognised": "已识别报错，但无法确定原因：{title}",
           "recognised_note": "这个报错有多种可能原因，贴出的内容看不出是哪一种；下面是定位原因的第一步，不是修复方法。"},
}


def render_text(answer: Answer, console: Console) -> None:
    label = LABELS[answer.lang]
    for notice in answer.notices:
        console.print(f"[yellow]note:[/yellow] {escape(notice)}")
    for code in answer.error_codes:
        name = f" = {code.name}" if code.name else ""
        module = f" ({escape(code.group)})" if code.group else ""
        console.print(f"[bold]{label['codes']}:[/bold] {escape(code.code)}{escape(name)}{module}: {escape(code.meaning)}")
    env = answer.environment
    if env is not None and env.only and not answer.answered:  # an environment dump: the check is the answer
        print_section(environment_section(env, answer.lang), console)
        return
    if not answer.answered and answer.recognised is not None:
        render_recognised_symptom(answer, console)
        if env is not None:
            print_section(environment_section(env, answer.lang, brief=True), console)
        return
    if not answer.answered:
        render_not_recognised(answer, console)
        if env is not None:
            print_section(environment_section(env, answer.lang, brief=True), console)
        return
    for rank, hit in enumerate(answer.results, 1):
        console.print(Rule(style="dim"))
        console.print(f"[bold]{rank}. {escape(hit.title)}[/bold]  ({label['confidence']} {hit.confidence:.0%})")
        console.print(f"[dim]{hit.id} · {escape(hit.why)}[/dim]")
        if hit.matched_lines:
            console.print(f"[bold]{label['seen']}:[/bold]")
            _matched_lines(console, hit)
        console.print(f"[bold]{label['cause']}:[/bold] {escape(hit.cause)}")
        _steps_and_commands(console, label, label["fix"], hit.fix_steps, hit.command_details)
        console.print()
    if env is not None:
        print_section(environment_section(env, answer.lang, brief=True), console)


def render_not_recognised(answer: Answer, console: Console) -> None:
    """Say plainly that the error is unknown, quote the line taken for the root error, and give its family's first
    triage steps, so the reply is still worth reading."""
    label = LABELS[answer.lang]
    console.print(f"[bold]{label['not_recognised' if answer.root or answer.family else 'no_match']}[/bold]")
    if answer.root:
        console.print(f"[bold]{label['root'].format(n=answer.root.line_no)}:[/bold] {escape(answer.root.text)}")
    family = answer.family
    if family:
        console.print(f"[bold]{label['family']}:[/bold] {escape(family.title)} — {escape(family.summary)}")
        _steps_and_commands(console, label, label["triage"], family.triage, family.commands)
    if answer.suggestions:
        console.print(f"{label['closest']}: " + "; ".join(escape(s) for s in answer.suggestions))
    console.print(f"[dim]{label['ask']}[/dim]")


def render_recognised_symptom(answer: Answer, console: Console) -> None:
    """A known error whose cause varies: name it, quote the line, and give its triage steps, never as the fix."""
    label = LABELS[answer.lang]
    hit = answer.recognised
    assert hit is not None
    console.print(f"[bold]{escape(label['recognised'].format(title=hit.title))}[/bold]")
    console.print(f"[dim]{label['recognised_note']}[/dim]")
    _matched_lines(console, hit)
    console.print(f"[bold]{label['cause']}:[/bold] {escape(hit.cause)}")
    _steps_and_commands(console, label, label["triage"], hit.fix_steps, hit.command_details)
    console.print(f"[dim]{label['ask']}[/dim]")


def _matched_lines(console: Console, hit: Hit) -> None:
    for line in hit.matched_lines:
        console.print(f"  [cyan]L{line.line_no}:[/cyan] {escape(line.text)}")


def _steps_and_commands(console: Console, label: dict[str, str], heading: str, steps: list[str], commands: list[CommandOut]) -> None:
    """Numbered steps, then every command on a line of its own with nothing around it, so it copies as is."""
    console.print(f"[bold]{heading}:[/bold]")
    for n, step in enumerate(steps, 1):
        console.print(f"  {n}. {escape(step)}")
    if commands:
        console.print(f"[bold]{label['commands']}:[/bold]")
        for cmd in commands:
            console.print(f"[dim]# {escape(cmd.explain)}[/dim]")
            console.print(f"[green]{escape(cmd.run)}[/green]", soft_wrap=True)
