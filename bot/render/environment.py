"""Terminal rendering of the Environment section; every command alone on its line, so it copies as is."""

from __future__ import annotations

from rich.console import Console
from rich.rule import Rule

from bot.environment.present import Section

STYLE = {"✗": "red", "!": "yellow", "?": "dim", "·": "dim", "✓": "green", "=": "cyan"}


def print_section(sec: Section, console: Console) -> None:
    from bot.render.text import escape  # the terminal's one escape (markup and control characters); text.py imports this module

    console.print(Rule(sec.title, style="dim", align="left"))
    if sec.intro:
        console.print(f"[dim]{escape(sec.intro)}[/dim]")
    console.print(escape(sec.found))
    for item in sec.problems + sec.notes:
        style = STYLE.get(item.mark, "")
        console.print(f"[{style}]{escape(item.mark)}[/{style}] {escape(item.text)}" if style else f"{escape(item.mark)} {escape(item.text)}")
        if item.fix:
            console.print(f"    → {escape(item.fix)}")
        if item.source and item.mark in ("✗", "!", "="):
            console.print(f"    [dim]{escape(item.source)}[/dim]", soft_wrap=True)
    if sec.fits:
        console.print(f"[green]{escape(sec.fits)}[/green]")
    if sec.missing:
        console.print(escape(sec.missing))
        for explain, run in sec.commands:
            console.print(f"[dim]# {escape(explain)}[/dim]")
            console.print(f"[green]{escape(run)}[/green]", soft_wrap=True)
    console.print()
