"""An engine Answer as Slack messages people can act on at a glance.

The first message leads with what is wrong and what to do (the first step and its command, filled with the
user's own values), then the next steps and a few copy-safe commands, in at most FIRST_MESSAGE_CHARS characters
of text. Everything else (the full cause, every command with its explanation, the matched lines, alternatives
with their numbers, error codes, the environment check) is in the details, sent to whoever clicks *Show
details*. Confidence is said in words ("matched your log line 3", "likely", "possible"); numbers are in the
details.

Everything user-derived passes blocks.esc; commands are one per code block, config keys and paths inline; a
placeholder the log did not fill is shown as `<name>` with a "replace ... with ..." line in the reply language.
"""

from __future__ import annotations

from typing import Any

import re2

from bot.engine.models import Answer, CommandOut, Hit
from bot.environment.present import release_line
from bot.slack.blocks import (
    ACTION_DETAILS, ACTION_ESCALATE, ACTION_FEEDBACK_DOWN, ACTION_FEEDBACK_UP, ACTION_RESOLVED, ACTION_SHARE,
    BLOCK_ACTIONS_ID, MAX_FALLBACK, MAX_QUOTED_LINE, Rendered, button, clip, clip_escaped, clip_mrkdwn, code_block,
    context, enforce_limits, esc, header, inline_code, label, pct, section,
)

FIRST_MESSAGE_CHARS = 1_500
LIKELY = 0.7  # calibrated confidence from which a cause is "likely" rather than "possible"
MAX_STEP_CHARS = 280
_SHELLISH = ("shell", "env")
# A placeholder left in prose ("{model_path} = the weights folder"); ${VAR} is the shell's. RE2: the text holds values
# from the user's log.
_PROSE_PLACEHOLDER = re2.compile(r"(^|[^$\w])\{([A-Za-z_][A-Za-z0-9_]{0,40})\}")


def prose(text: str) -> str:
    """Escaped prose with any unfilled {name} shown as <name>, like in the commands."""
    if "{" not in text:
        return esc(text)
    for _ in range(2):  # "{a}{b}": a match takes the character before it, so a neighbour needs a second pass
        text = _PROSE_PLACEHOLDER.sub(r"\1<\2>", text)
    return esc(text)


# --- small pieces ---------------------------------------------------------------------------------


def evidence_words(hit: Hit, lang: str) -> str:
    """How sure the bot is, in words: a signature on a line of the log is a match, not a guess."""
    if "signatures" in hit.retrievers and hit.matched_lines:
        return label(lang, "matched_line", n=hit.matched_lines[0].line_no)
    return label(lang, "likely" if hit.confidence >= LIKELY else "possible")


def shown_command(command: CommandOut) -> str:
    """The command as the user should see it: unfilled {name} becomes <name>, which reads as "put yours here".
    The engine lists the unfilled names, so no pattern runs over text that holds the user's values."""
    text = command.run
    for placeholder in command.unfilled:
        pieces = text.split("{" + placeholder.name + "}")
        text = pieces[0]
        for piece in pieces[1:]:  # ${name} is the shell's and stays
            text += ("{" + placeholder.name + "}" if text.endswith("$") else f"<{placeholder.name}>") + piece
    return text


def _variant_key(command: CommandOut) -> str:
    """Commands that are variants of one another (the FAQ's template and its example value) share a key."""
    run = command.template.strip()
    if command.kind == "env" or run.startswith("export "):
        return "env:" + run.removeprefix("export ").split("=", 1)[0].strip()
    return f"{command.kind}:{run}"


def _fit(command: CommandOut) -> int:
    """Filled from the user's log beats a literal example, which beats a template with <name> left in it."""
    if command.unfilled:
        return 0
    return 2 if command.run != command.template else 1


def distinct_commands(commands: list[CommandOut]) -> list[CommandOut]:
    """One variant per command (the FAQ's template and its example value share a key): the best fit of each, in
    the place of the first."""
    chosen: dict[str, CommandOut] = {}
    for command in commands:
        key = _variant_key(command)
        if key not in chosen or _fit(command) > _fit(chosen[key]):
            chosen[key] = command
    return list(chosen.values())


def _key_word(command: CommandOut) -> str:
    """The word a fix step would name this command by: an env var, a config key, or the program."""
    run = command.template.strip().removeprefix("export ").strip()
    for stop in ("=", " ", ":"):
        run = run.split(stop, 1)[0]
    return run.strip("-'\"")


def lead_first(commands: list[CommandOut], step: str | None) -> list[CommandOut]:
    """The command the first step talks about goes first (it is shown right under that step); then the rest in
    the corpus's order."""
    if not step:
        return commands
    for i, command in enumerate(commands):
        word = _key_word(command)
        if len(word) >= 3 and word in step:
            return [command] + commands[:i] + commands[i + 1:]
    return commands


def command_lines(commands: list[CommandOut], limit: int, explain: bool = False, step: str | None = None) -> tuple[list[str], list[CommandOut]]:
    """Shell commands one per code block; config keys, paths and code inline. Returns the lines and the commands shown."""
    lines: list[str] = []
    shown: list[CommandOut] = []
    for command in lead_first(distinct_commands(commands), step)[:limit]:
        text = shown_command(command)
        if command.kind in _SHELLISH:
            lines.append((f"_{prose(command.explain)}_\n" if explain and command.explain else "") + code_block(text))
        else:
            lines.append(f"{inline_code(text)} · {prose(command.explain)}" if command.explain else inline_code(text))
        shown.append(command)
    return lines, shown


def replace_hints(commands: list[CommandOut], lang: str) -> list[str]:
    seen: dict[str, str] = {}
    for command in commands:
        for placeholder in command.unfilled:
            seen.setdefault(placeholder.name, placeholder.hint)
    return [label(lang, "replace", name=inline_code(f"<{name}>"), hint=esc(hint or label(lang, "your_value")))
            for name, hint in seen.items()]


def source_line(hit: Hit, lang: str) -> str | None:
    if not hit.source_url:
        return None
    url = hit.source_url
    if "MindIE-LLM" in url and "faq" in url:
        name = label(lang, "faq_name")
    else:
        name = esc(clip(url.removeprefix("https://").split("?")[0], 60))
    return label(lang, "source", link=f"<{url}|{name}>")


def code_lines(answer: Answer, limit: int = 2) -> list[str]:
    out = []
    for c in answer.error_codes[:limit]:
        module = c.group or c.system.upper()
        name = f" {esc(c.name)}" if c.name else ""
        out.append(label(answer.lang, "code_line", code=f"{inline_code(c.code)}{name}", module=esc(module), meaning=esc(clip(c.meaning, 300))))
    return out


def _asks_about_a_code(answer: Answer) -> bool:
    """A question (not a pasted log) naming a code a table lists: the code's meaning is what the person asked."""
    return not answer.is_log and any(c.listed for c in answer.error_codes)


def _steps(hit: Hit) -> list[str]:
    return hit.fix_steps or [line for line in hit.fix.splitlines() if line.strip()]


def environment_lines(answer: Answer, limit: int = 2) -> list[str]:
    """Version mismatches found in the paste, one line each with what to install (the full check is in the details)."""
    env = answer.environment
    if env is None:
        return []
    zh = answer.lang == "zh"
    out = []
    for release in env.releases[:limit]:  # the question asked which releases go together: the table's answer first
        row = release_line(release, answer.lang)
        out.append(f"{row.mark} {esc(row.text)} <{row.source}|{label(answer.lang, 'env_table')}>" if row.source.startswith("https://")
                   else f"{row.mark} {esc(row.text)}")
    for check in [c for c in env.checks if c.verdict == "mismatch"][:limit]:
        pair = f"{check.pair[0]} {check.values[0]} ↔ {check.pair[1]} {check.values[1]}"
        fix = check.fix_zh if zh and check.fix_zh else check.fix
        out.append(label(answer.lang, "env_mismatch", pair=esc(pair), fix=inline_code(fix) if fix else "—"))
    return out


def text_size(blocks: list[dict[str, Any]]) -> int:
    """Characters of text a person reads (buttons' values excluded)."""
    total = 0
    for block in blocks:
        if isinstance(block.get("text"), dict):
            total += len(block["text"].get("text", ""))
        if block.get("type") == "context":
            total += sum(len(e.get("text", "")) for e in block.get("elements", []))
        if block.get("type") == "actions":
            total += sum(len(e["text"]["text"]) for e in block.get("elements", []) if isinstance(e.get("text"), dict))
    return total


# --- the first message ----------------------------------------------------------------------------


def _problem_text(hit: Hit, lang: str, n_steps: int, n_commands: int, explain: bool) -> tuple[str, list[CommandOut]]:
    steps = _steps(hit)
    lines = [f"*{esc(hit.title)}* · _{evidence_words(hit, lang)}_"]
    if steps:
        lines.append(f"→ {prose(clip(steps[0], MAX_STEP_CHARS))}")
    commands, shown = command_lines(hit.command_details, n_commands, explain, step=steps[0] if steps else None)
    if commands:
        lines.append(commands[0])
    rest = [f"{i}. {prose(clip(step, MAX_STEP_CHARS))}" for i, step in enumerate(steps[1:n_steps], 2)]
    if rest:
        lines.append("\n".join(rest))
    if commands[1:]:
        lines.append("\n".join(commands[1:]))
    return "\n".join(lines), shown


def _first_message(answer: Answer, threshold: float, n_steps: int, n_commands: int, explain: bool) -> list[dict[str, Any]]:
    lang = answer.lang
    blocks: list[dict[str, Any]] = []
    if answer.error_codes:
        blocks.append(section("\n".join(code_lines(answer))))
    distinct = [h for h in answer.results if h.distinct]
    shown: list[CommandOut] = []
    if len(distinct) > 1:
        blocks.append(section(f"*{label(lang, 'problems_found', n=len(distinct))}*"))
        for i, hit in enumerate(distinct[:3]):
            text, used = _problem_text(hit, lang, n_steps if i == 0 else 1, n_commands if i == 0 else 1, explain)
            blocks.append(section(text))
            shown += used
        tops = distinct
    else:
        text, shown = _problem_text(answer.results[0], lang, n_steps, n_commands, explain)
        blocks.append(section(text))
        tops = [answer.results[0]]
    notes = replace_hints(shown, lang)
    notes += environment_lines(answer)
    others = [h for h in answer.results if h not in tops and h.confidence >= threshold]
    if others:
        items = [f"*{esc(h.title)}* ({evidence_words(h, lang)})" for h in others[:2]]
        notes.append(f"{label(lang, 'also_possible')}: " + " · ".join(items))
    source = source_line(answer.results[0], lang)
    if source:
        notes.append(source)
    if notes:
        blocks.append(context(*[clip_mrkdwn(n, 400) for n in notes[:5]]))
    return blocks


def _buttons(answer: Answer, fp: str, *, details_value: dict[str, Any] | None, share_value: dict[str, Any] | None,
             escalate_value: dict[str, Any] | None, resolve_value: dict[str, Any] | None) -> dict[str, Any]:
    lang = answer.lang
    elements: list[dict[str, Any]] = []
    if details_value is not None:
        elements.append(button(label(lang, "details"), ACTION_DETAILS, details_value))
    if answer.results:
        value = {"e": answer.results[0].id, "f": fp, "l": lang}
        elements += [button(label(lang, "helpful"), ACTION_FEEDBACK_UP, value), button(label(lang, "unhelpful"), ACTION_FEEDBACK_DOWN, value)]
    if resolve_value is not None:
        elements.append(button(label(lang, "resolved"), ACTION_RESOLVED, resolve_value))
    if escalate_value is not None:
        elements.append(button(label(lang, "human"), ACTION_ESCALATE, escalate_value))
    if share_value is not None:
        elements.append(button(label(lang, "share"), ACTION_SHARE, share_value, style="primary"))
    return {"type": "actions", "block_id": BLOCK_ACTIONS_ID, "elements": elements}


def render_answer(
    answer: Answer,
    *,
    fp: str,
    threshold: float = 0.45,
    details_value: dict[str, Any] | None = None,
    share_value: dict[str, Any] | None = None,
    escalate_value: dict[str, Any] | None = None,
    resolve_value: dict[str, Any] | None = None,
    extra_notes: list[str] | None = None,
    shared_by: str | None = None,
    question: str | None = None,
) -> Rendered:
    """The first message: answer first, within FIRST_MESSAGE_CHARS; or the short not-recognised reply."""
    if not answer.answered or not answer.results:
        return render_abstain(answer, escalate_value=escalate_value, extra_notes=extra_notes, details_value=details_value)
    lang = answer.lang
    head: list[dict[str, Any]] = []
    if shared_by:  # a shared slash answer restates the question it answers
        quoted = f"\n> {esc(clip(' '.join((question or '').split()), 300))}" if question else ""
        head.append(context(clip_mrkdwn(label(lang, "question_from", user=shared_by) + quoted, 500)))
    notes = [clip_mrkdwn(esc(n), 300) for n in answer.notices[:2]] + [clip_mrkdwn(n, 300) for n in (extra_notes or [])[:3]]
    tail = [_buttons(answer, fp, details_value=details_value, share_value=share_value, escalate_value=escalate_value,
                     resolve_value=resolve_value)]
    blocks: list[dict[str, Any]] = []
    # Fit the budget: fewer steps, fewer commands, no explanations, until the text is short enough.
    for n_steps, n_commands, explain in ((5, 3, False), (4, 2, False), (3, 2, False), (2, 1, False), (1, 1, False)):
        blocks = head + _first_message(answer, threshold, n_steps, n_commands, explain)
        if notes:
            blocks.append(context(*notes))
        if text_size(blocks + tail) <= FIRST_MESSAGE_CHARS:
            break
    return Rendered(text=fallback_text(answer), blocks=enforce_limits(blocks, lang, tail=tail))


# --- details (Show details) -----------------------------------------------------------------------


def render_details(answer: Answer, *, extra_notes: list[str] | None = None) -> Rendered:
    """Everything behind the first message: cause, matched lines, every step and command with its explanation,
    alternatives with their confidence, error codes, evidence, source, environment."""
    lang = answer.lang
    if not answer.results:
        return render_abstain(answer, extra_notes=extra_notes, full=True)
    blocks: list[dict[str, Any]] = [header(label(lang, "details_title", title=answer.results[0].title))]
    for rank, hit in enumerate(answer.results[:3]):
        if rank:
            blocks.append({"type": "divider"})
            blocks.append(section(f"*{esc(hit.title)}*"))
        meta = f"{evidence_words(hit, lang)} · {label(lang, 'confidence', pct=pct(hit.confidence))} · {esc(hit.component)} · `{esc(hit.id)}`"
        blocks.append(context(meta, esc(clip(hit.why, 300))))
        quoted = _quoted_lines(hit, lang, 3)
        if quoted:
            blocks.append(section(f"*{label(lang, 'recognised')}*\n" + "\n".join(quoted)))
        body, shown = _entry_body(hit, lang, n_commands=12)
        blocks += body
        hints = replace_hints(shown, lang)
        source = source_line(hit, lang)
        extra = hints + ([source] if source else []) + ([label(lang, "source_text", text=esc(clip(hit.source, 400)))] if hit.source else [])
        if extra:
            blocks.append(context(*[clip_mrkdwn(e, 600) for e in extra[:5]]))
    if answer.error_codes:
        blocks.append(section(f"*{label(lang, 'codes')}*\n" + "\n".join(code_lines(answer, limit=5))))
    blocks.extend(_environment(answer))
    notes = [esc(n) for n in answer.notices] + list(extra_notes or [])
    if notes:
        blocks.append(context(*[clip_mrkdwn(n, 500) for n in notes[:10]]))
    return Rendered(text=fallback_text(answer), blocks=enforce_limits(blocks, lang))


# --- not recognised -------------------------------------------------------------------------------


def render_abstain(answer: Answer, *, escalate_value: dict[str, Any] | None = None, extra_notes: list[str] | None = None,
                   full: bool = False, details_value: dict[str, Any] | None = None) -> Rendered:
    """The honest "not recognised" reply, short: the line taken for the root error, what its code means, the
    family's first steps and commands, the closest topics on one line, *Closest topic* (the nearest entry in full,
    on request) and *Ask a human*. `full` (details) gives every triage step and command, then that closest entry,
    labelled as a lead and not a diagnosis. An environment dump gets the environment check instead."""
    lang = answer.lang
    if answer.environment is not None and answer.environment.only:
        return render_environment(answer, escalate_value=escalate_value, extra_notes=extra_notes)
    tail = _abstain_buttons(lang, escalate_value, details_value if answer.closest is not None else None,
                            recognised=answer.recognised is not None)
    if full:
        blocks = _abstain_blocks(answer, extra_notes, full=True, step_chars=2_000, n_steps=99, n_commands=12)
        if answer.closest is not None and answer.recognised is None:  # a recognised error's steps are already there
            blocks += _closest_blocks(answer.closest, lang)
        return Rendered(text=fallback_text(answer), blocks=enforce_limits(blocks, lang, tail=tail))
    for step_chars, n_steps, n_commands in ((MAX_STEP_CHARS, 3, 2), (200, 3, 1), (160, 2, 1), (120, 1, 1)):
        blocks = _abstain_blocks(answer, extra_notes, full=False, step_chars=step_chars, n_steps=n_steps, n_commands=n_commands)
        if text_size(blocks + tail) <= FIRST_MESSAGE_CHARS:
            break
    return Rendered(text=fallback_text(answer), blocks=enforce_limits(blocks, lang, tail=tail))


def _abstain_blocks(answer: Answer, extra_notes: list[str] | None, *, full: bool, step_chars: int, n_steps: int,
                    n_commands: int) -> list[dict[str, Any]]:
    lang = answer.lang
    if answer.recognised is not None:
        return _symptom_blocks(answer, extra_notes, full=full, step_chars=step_chars, n_steps=n_steps, n_commands=n_commands)
    if _asks_about_a_code(answer):  # its meaning first
        lines = code_lines(answer) + [f"*{label(lang, 'code_known')}*"]
    else:
        lines = [f"*{label(lang, 'not_recognised' if answer.root or answer.family else 'no_match')}*"]
        if answer.root:
            lines.append(f"{label(lang, 'root', n=answer.root.line_no)}: {inline_code(clip(answer.root.text, 200))}")
        lines += code_lines(answer)
    blocks: list[dict[str, Any]] = [section("\n".join(lines))]
    if not full and (env_notes := environment_lines(answer)):  # a question's table row or a mismatch: worth the first message
        blocks.append(section("\n".join(env_notes)))
    family = answer.family
    commands: list[CommandOut] = []
    if family:
        text = [f"*{esc(label(lang, 'family', title=family.title))}*"]
        text += [f"{i}. {prose(clip(step, step_chars))}" for i, step in enumerate(family.triage[:n_steps], 1)]
        command_text, commands = command_lines(family.commands, n_commands, explain=full)
        blocks.append(section("\n".join(text + command_text)))
    notes = replace_hints(commands, lang)
    if answer.suggestions:
        notes.append(f"{label(lang, 'closest')}: " + " · ".join(esc(clip(s, 90)) for s in answer.suggestions[:3]))
    if not family:
        notes.append(label(lang, "tip"))
    notes += [esc(n) for n in answer.notices[:2]] + list(extra_notes or [])[:3]
    blocks.append(context(*[clip_mrkdwn(n, 400) for n in notes[:8]]))
    if full:
        blocks.extend(_environment(answer))
    return blocks


def _quoted_lines(hit: Hit, lang: str, n: int) -> list[str]:
    """The first `n` lines of the user's log an entry recognised, quoted with their line numbers."""
    return [f"> {inline_code(clip(ml.text.strip(), MAX_QUOTED_LINE))}  _({label(lang, 'line', n=ml.line_no)})_" for ml in hit.matched_lines[:n]]


def _symptom_blocks(answer: Answer, extra_notes: list[str] | None, *, full: bool, step_chars: int, n_steps: int,
                    n_commands: int) -> list[dict[str, Any]]:
    """A recognised error whose cause varies (a triage entry): its name and line, what the code means, and its first
    steps and commands under "First steps", said plainly to be a triage and not a fix."""
    lang = answer.lang
    hit = answer.recognised
    assert hit is not None
    lines = [f"*{esc(label(lang, 'symptom_title', title=hit.title))}*"]
    lines += _quoted_lines(hit, lang, 2)
    lines += code_lines(answer)
    blocks: list[dict[str, Any]] = [section("\n".join(lines))]
    if full:
        blocks.append(section(f"*{label(lang, 'cause')}*\n{prose(hit.cause)}"))
    text = [f"*{label(lang, 'triage')}*"]
    text += [f"{i}. {prose(clip(step, step_chars))}" for i, step in enumerate(_steps(hit)[:n_steps], 1)]
    command_text, commands = command_lines(hit.command_details, n_commands, explain=full)
    blocks.append(section("\n".join(text + command_text)))
    notes = [esc(label(lang, "symptom_note"))] + replace_hints(commands, lang)
    source = source_line(hit, lang)
    if source:
        notes.append(source)
    notes += [esc(n) for n in answer.notices[:2]] + list(extra_notes or [])[:3]
    blocks.append(context(*[clip_mrkdwn(n, 400) for n in notes[:8]]))
    if full:
        blocks.extend(_environment(answer))
    return blocks


def _human_button(lang: str, escalate_value: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The actions block of a reply that has only *Ask a human* (not recognised, environment dump)."""
    if escalate_value is None:
        return []
    return [{"type": "actions", "block_id": BLOCK_ACTIONS_ID, "elements": [button(label(lang, "human"), ACTION_ESCALATE, escalate_value)]}]


def _abstain_buttons(lang: str, escalate_value: dict[str, Any] | None, details_value: dict[str, Any] | None,
                     recognised: bool = False) -> list[dict[str, Any]]:
    """A not-recognised reply's buttons: *Closest topic* when there is one worth reading (*Show details* for a
    recognised error's remaining steps), and *Ask a human*."""
    if details_value is None:
        return _human_button(lang, escalate_value)
    elements = [button(label(lang, "details" if recognised else "closest_button"), ACTION_DETAILS, details_value)]
    if escalate_value is not None:
        elements.append(button(label(lang, "human"), ACTION_ESCALATE, escalate_value))
    return [{"type": "actions", "block_id": BLOCK_ACTIONS_ID, "elements": elements}]


def _entry_body(hit: Hit, lang: str, *, n_commands: int) -> tuple[list[dict[str, Any]], list[CommandOut]]:
    """An entry's cause, every fix step and its commands with their explanations; also the commands shown."""
    blocks = [section(f"*{label(lang, 'cause')}*\n{prose(hit.cause)}")]
    steps = [f"{i}. {prose(step)}" for i, step in enumerate(_steps(hit), 1)]
    if steps:
        blocks.append(section(f"*{label(lang, 'fix')}*\n" + "\n".join(steps)))
    commands, shown = command_lines(hit.command_details, n_commands, explain=True)
    if commands:
        blocks.append(section(f"*{label(lang, 'commands')}*\n" + "\n".join(commands)))
    return blocks, shown


def _closest_blocks(hit: Hit, lang: str) -> list[dict[str, Any]]:
    """The nearest entry of a not-recognised paste, whole, under a title that says it is a lead, not the answer."""
    blocks: list[dict[str, Any]] = [{"type": "divider"}, section(f"*{esc(label(lang, 'closest_title', title=hit.title))}*"),
                                    context(esc(label(lang, "closest_note")))]
    blocks += _entry_body(hit, lang, n_commands=8)[0]
    source = source_line(hit, lang)
    if source:
        blocks.append(context(clip_mrkdwn(source, 600)))
    return blocks


def _environment(answer: Answer) -> list[dict[str, Any]]:
    if answer.environment is None:
        return []
    from bot.slack.env_blocks import environment_blocks  # env_blocks builds on blocks.py

    return environment_blocks(answer.environment, answer.lang)


def render_environment(answer: Answer, *, escalate_value: dict[str, Any] | None = None, extra_notes: list[str] | None = None) -> Rendered:
    """A paste that is only an environment dump (npu-smi, pip list, version files): the check is the whole reply."""
    from bot.environment.present import section as environment_section
    from bot.slack.env_blocks import fallback, section_blocks

    lang = answer.lang
    sec = environment_section(answer.environment, lang)
    blocks = section_blocks(sec)[1:]  # no divider on top of a reply of its own
    notes = [esc(n) for n in answer.notices] + list(extra_notes or [])
    if notes:
        blocks.append(context(*[clip_mrkdwn(n, 500) for n in notes[:10]]))
    tail = _human_button(lang, escalate_value)
    return Rendered(text=fallback(sec), blocks=enforce_limits(blocks, lang, tail=tail))


# --- notification text ----------------------------------------------------------------------------


def fallback_text(answer: Answer) -> str:
    """The top-level `text` (notifications, clients without blocks): short, answer first, escaped like the blocks."""
    lang = answer.lang
    if not answer.answered and answer.recognised is not None:
        hit = answer.recognised
        lines = [esc(label(lang, "symptom_title", title=hit.title)), esc(label(lang, "symptom_note"))]
        lines.append(" ".join(f"{i}. {prose(s)}" for i, s in enumerate(_steps(hit)[:2], 1)))
        return clip_escaped("\n".join(lines), MAX_FALLBACK)
    if not answer.answered or not answer.results:
        lines = [label(lang, "code_known" if _asks_about_a_code(answer) else
                       "not_recognised" if answer.root or answer.family else "no_match")]
        lines += [f"{c.code}: {esc(clip(c.meaning, 200))}" for c in answer.error_codes[:2] if c.listed]
        if answer.root:
            lines.append(f"{label(lang, 'root', n=answer.root.line_no)}: {esc(clip(answer.root.text, MAX_QUOTED_LINE))}")
        if answer.family:
            lines.append(esc(label(lang, "family", title=answer.family.title)))
            lines.append(" ".join(f"{i}. {esc(s)}" for i, s in enumerate(answer.family.triage[:3], 1)))
        return clip_escaped("\n".join(lines), MAX_FALLBACK)
    top = answer.results[0]
    steps = _steps(top)
    lines = [f"{esc(top.title)} ({evidence_words(top, lang)})"]
    if steps:
        lines.append(f"→ {prose(steps[0])}")
    commands = [shown_command(c) for c in distinct_commands(top.command_details)[:2]]
    if commands:
        lines.append(" | ".join(esc(c) for c in commands))
    return clip_escaped("\n".join(lines), MAX_FALLBACK)
