"""Terminal rendering: readable, and every command on a line of its own with nothing around it, so it copies as is."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule

from bot.engine.models import Answer

LABELS = {
    "en": {"no_match": "No confident match.", "closest": "Closest topics", "cause": "Cause", "fix": "Fix",
           "commands": "Commands", "seen": "Recognised in your log", "codes": "Error code", "confidence": "confidence"},
    "zh": {"no_match": "没有足够把握的匹配。", "closest": "最接近的主题", "cause": "原因", "fix": "解决步骤",
           "commands": "命令", "seen": "识别到的日志行", "codes": "错误码", "confidence": "置信度"},
}


def render_text(answer: Answer, console: Console) -> None:
    label = LABELS[answer.lang]
    for notice in answer.notices:
        console.print(f"[yellow]note:[/yellow] {escape(notice)}")
    for code in answer.error_codes:
        console.print(f"[bold]{label['codes']}:[/bold] {code.code} = {code.name} ({escape(code.group)}): {escape(code.meaning)}")
    if not answer.answered:
        console.print(f"[bold]{label['no_match']}[/bold]")
        if answer.suggestions:
            console.print(f"{label['closest']}: " + "; ".join(escape(s) for s in answer.suggestions))
        return
    for rank, hit in enumerate(answer.results, 1):
        console.print(Rule(style="dim"))
        console.print(f"[bold]{rank}. {escape(hit.title)}[/bold]  ({label['confidence']} {hit.confidence:.0%})")
        console.print(f"[dim]{hit.id} · {escape(hit.why)}[/dim]")
        if hit.matched_lines:
            console.print(f"[bold]{label['seen']}:[/bold]")
            for line in hit.matched_lines:
                console.print(f"  [cyan]L{line.line_no}:[/cyan] {escape(line.text)}")
        console.print(f"[bold]{label['cause']}:[/bold] {escape(hit.cause)}")
        console.print(f"[bold]{label['fix']}:[/bold]")
        for n, step in enumerate(hit.fix_steps, 1):
            console.print(f"  {n}. {escape(step)}")
        if hit.command_details:
            console.print(f"[bold]{label['commands']}:[/bold]")
            for cmd in hit.command_details:
                console.print(f"[dim]# {escape(cmd.explain)}[/dim]")
                console.print(f"[green]{escape(cmd.run)}[/green]", soft_wrap=True)
        console.print()
