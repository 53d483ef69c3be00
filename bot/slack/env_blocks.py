"""The Environment section as Block Kit: what was found, mismatches first with what to install, observations, then
the commands that collect what the paste lacks. Limits are enforced by blocks.enforce_limits like any reply."""

from __future__ import annotations

from typing import Any

from bot.environment.models import EnvironmentReport
from bot.environment.present import Section, plain, section
from bot.slack.blocks import MAX_SECTION, clip, clip_escaped, code_block, context, esc, section as text_section

MAX_ITEMS = 8  # problems and notes shown; the rest are summarised by count
MAX_COMMANDS = 10  # every collection command fits one section


def environment_blocks(report: EnvironmentReport, lang: str) -> list[dict[str, Any]]:
    """The short section under an answer: collection commands are left to `/mindie-help env`."""
    sec = section(report, lang, brief=True)
    if sec.missing:
        sec.missing = sec.missing.replace("`mindie-help env`", "`/mindie-help env`")
    return section_blocks(sec)


def section_blocks(sec: Section) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "divider"}]
    head = f"*{esc(sec.title)}*"
    if sec.intro:
        head += f"\n_{esc(sec.intro)}_"
    blocks.append(text_section(f"{head}\n{esc(clip(sec.found, 1500))}"))
    items = sec.problems + sec.notes
    lines = []
    for item in items[:MAX_ITEMS]:
        line = f"{item.mark} {esc(item.text)}"
        if item.fix:  # commands as code, advice as text
            line += f"\n      → `{esc(item.fix)}`" if item.fix.startswith(("pip ", "export ")) else f"\n      → {esc(item.fix)}"
        if item.source and item.mark in ("✗", "!", "=") and item.source.startswith("https://"):
            line += f" <{item.source}|source>"
        lines.append(line)
    if len(items) > MAX_ITEMS:
        lines.append(f"… +{len(items) - MAX_ITEMS}")
    if lines:
        blocks.append(text_section(clip("\n".join(lines), MAX_SECTION)))
    if sec.fits:
        blocks.append(context(esc(clip(sec.fits, 1900))))
    if sec.missing and sec.commands:
        commands = "\n".join(f"_{esc(explain)}_\n{code_block(run)}" for explain, run in sec.commands[:MAX_COMMANDS])
        blocks.append(text_section(clip(f"{esc(sec.missing)}\n{commands}", MAX_SECTION)))
    elif sec.missing:
        blocks.append(context(esc(clip(sec.missing, 1900))))
    return blocks


def fallback(sec: Section) -> str:
    """The top-level `text`: Slack parses it as mrkdwn too, so the paste's values in it are escaped (blocks.esc)."""
    return clip_escaped(esc(plain(sec)), 2500)
