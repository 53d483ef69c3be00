"""Block Kit building blocks shared by every Slack reply: the bot's bilingual strings, escaping, sections and
buttons, short messages (usage, errors), and Slack's limits. Answers themselves are laid out by answer_view.py.

Limits respected (https://api.slack.com/reference/block-kit): at most 50 blocks per message, 3000 characters
per section/context text, 150 per header, 75 per button label, 2000 per button value; the message's total
text stays under 40000 characters. Anything longer is trimmed with "…" and a note, never rejected by Slack.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


MAX_BLOCKS = 50
MAX_SECTION = 3000
MAX_HEADER = 150
MAX_CONTEXT_ELEMENTS = 10
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_MESSAGE_CHARS = 40000
MAX_FALLBACK = 3000
MAX_QUOTED_LINES = 3
MAX_QUOTED_LINE = 300

ACTION_FEEDBACK_UP = "mindie_help_feedback_up"
ACTION_FEEDBACK_DOWN = "mindie_help_feedback_down"
ACTION_SHARE = "mindie_help_share"
ACTION_ESCALATE = "mindie_help_escalate"
ACTION_DETAILS = "mindie_help_details"
ACTION_RESOLVED = "mindie_help_resolved"
BLOCK_ACTIONS_ID = "mindie_help_actions"

LABELS: dict[str, dict[str, str]] = {
    "en": {
        "confidence": "confidence {pct}",
        "line": "line {n}",
        "cause": "Cause",
        "fix": "Fix",
        "commands": "Commands",
        "codes": "Error codes",
        "helpful": "👍 Helpful",
        "unhelpful": "👎 Not helpful",
        "share": "Share in channel",
        "no_match": "I couldn't find a confident match for this, so I won't guess.",
        "not_recognised": "Not recognised: this error is not in my knowledge base, so I won't guess a fix.",
        "root": "The line I take for the root error (line {n})",
        "family": "It looks like: {title}",
        "triage": "First steps",
        "code_line": "{code} ({module}): {meaning}",
        "closest": "Closest topics",
        "closest_button": "🔎 Closest topic",
        "closest_title": "Closest topic, not a diagnosis: {title}",
        "closest_note": "This entry did not match your paste with confidence; read it as a lead to check against your log, not as the fix.",
        "symptom_title": "Recognised, cause not determined: {title}",
        "symptom_note": "This error has several possible causes and your paste does not show which one, so these are first steps to find it, not a fix.",
        "tip": "Tip: paste the full error log (the first ERROR lines and the final exception), or ask with `/mindie-help <question>`.",
        "human": "🙋 Ask a human",
        "trimmed": "_…trimmed to fit Slack's limits ({what})._",
        "more_hidden": "{n} more block(s) not shown",
        "long_text": "long text shortened",
        "error": "Sorry, something went wrong while diagnosing this (ref `{ref}`). Please try again in a moment, or ask in the channel.",
        "usage": (
            "*mindie-help* diagnoses MindIE errors.\n"
            "• `/mindie-help <error line or question>`: answer visible only to you, with a button to share it.\n"
            "• Mention me with a pasted log, or in a thread under one: I answer in the thread.\n"
            "• Send me a direct message, or share a `.log`/`.txt` file with me.\n"
            "• `/mindie-help env <npu-smi info, pip list or version files>`: check the versions against the compatibility table.\n"
            "Example: `/mindie-help Socket bind failed, ip 127.0.0.1 port 1025`"
        ),
        "matched_line": "matched your log line {n}",
        "likely": "likely",
        "possible": "possible",
        "problems_found": "{n} problems found",
        "also_possible": "Also possible",
        "replace": "Replace {name} with {hint}.",
        "your_value": "your own value",
        "source": "Source: {link}",
        "source_text": "From: {text}",
        "faq_name": "MindIE LLM FAQ",
        "details": "Show details",
        "details_title": "Details: {title}",
        "recognised": "Recognised in your message",
        "resolved": "✅ Resolved",
        "resolved_by": "✅ Marked resolved by {user}.",
        "resolved_ack": "Marked as resolved. Thanks for telling us!",
        "requested_by": "🙋 A human was asked by {user}.",
        "question_from": "{user} asked:",
        "chitchat": "You're welcome! Paste an error or a log any time and I'll take a look.",
        "details_expired": "Those details are no longer available; ask me again with the log.",
        "escalation_post": "{group}{user} asked for a human about {where}.",
        "escalation_where_thread": "this thread: {link}",
        "escalation_where_dm": "a direct message with the bot",
        "escalation_where_private": "a private answer in {channel}",
        "escalation_question": "Their question:",
        "open_thread": "open the thread",
        "env_mismatch": "⚠️ Version mismatch in your paste: {pair} → {fix}",
        "env_table": "compatibility table",
        "code_known": "I know this code, but not which fix applies to your case: here are the first steps for it.",
        "channel_off": "An admin switched me off in this channel. Ask me with `/mindie-help <question>` or in a direct message.",
        "escalated_channel": "I've asked the support team in {channel}; someone will follow up here.",
        "no_escalation_dm": "I can't call the support team from a direct message because no support channel is configured. Please ask in your support channel.",
        "thanks_up": "Thanks for the feedback 👍",
        "thanks_down": "Thanks, noted 👎. You can also ask a human in the channel.",
        "thanks_changed": " (your earlier vote was changed)",
        "escalated": "{group}{user} asked for a human: the bot had no confident answer here.",
        "escalated_ack": "I've asked the support team to take a look.",
        "escalated_private": " Your question was visible only to you, so it was not posted: add it in the channel for them.",
        "already_escalated": "A human was already asked to look at this (by {user}); they will reply in the thread.",
        "escalated_recently": "You asked for a human a few minutes ago; the support team has been told.",
        "someone": "someone",
        "not_in_channel": "I can't post in this conversation. Invite me with `/invite @mindie-help`, or ask the support team directly.",
        "rate_limited": "You're sending requests faster than I can answer them; please try again in about {seconds} s.",
        "busy": "I'm answering a lot of questions right now; please try again in a minute.",
        "file_slow": "Only the first part of {name} could be downloaded in time.",
        "file_skipped": "Skipped file {name}: {reason}.",
        "truncated_file": "Only the first and last {kb} KB of {name}, and the error lines between, were read.",
    },
    "zh": {
        "confidence": "置信度 {pct}",
        "line": "第 {n} 行",
        "cause": "原因",
        "fix": "解决方法",
        "commands": "命令",
        "codes": "错误码",
        "helpful": "👍 有帮助",
        "unhelpful": "👎 没帮助",
        "share": "分享到频道",
        "no_match": "没有找到足够可信的匹配，我不做猜测。",
        "not_recognised": "未识别：知识库中没有这个报错，我不猜测解决方法。",
        "root": "我判断的根因报错（第 {n} 行）",
        "family": "问题类别：{title}",
        "triage": "先做这几步",
        "code_line": "{code}（{module}）：{meaning}",
        "closest": "最接近的主题",
        "closest_button": "🔎 最接近的主题",
        "closest_title": "最接近的主题（不是诊断）：{title}",
        "closest_note": "这个条目与你贴的内容没有可靠匹配；请把它当作需要对照日志核实的线索，而不是修复方法。",
        "symptom_title": "已识别报错，但无法确定原因：{title}",
        "symptom_note": "这个报错有多种可能原因，你贴的内容看不出是哪一种；下面是定位原因的第一步，不是修复方法。",
        "tip": "提示：请粘贴完整的报错日志（第一条 ERROR 和最后的异常），或使用 `/mindie-help <问题>` 提问。",
        "human": "🙋 找人工支持",
        "trimmed": "_…内容过长，已按 Slack 限制截断（{what}）。_",
        "more_hidden": "另有 {n} 个区块未显示",
        "long_text": "过长的文字已缩短",
        "error": "抱歉，诊断时出错（编号 `{ref}`）。请稍后重试，或在频道里提问。",
        "usage": (
            "*mindie-help* 用于诊断 MindIE 报错。\n"
            "• `/mindie-help <报错行或问题>`：仅你可见的回答，可一键分享到频道。\n"
            "• 在粘贴的日志中或其下方的话题里 @我：我会在话题中回复。\n"
            "• 私信我，或发给我 `.log`/`.txt` 文件。\n"
            "• `/mindie-help env <npu-smi info、pip list 或版本文件内容>`：按配套表检查版本。\n"
            "示例：`/mindie-help Socket bind failed, ip 127.0.0.1 port 1025`"
        ),
        "matched_line": "匹配到你日志的第 {n} 行",
        "likely": "很可能",
        "possible": "可能",
        "problems_found": "发现 {n} 个问题",
        "also_possible": "也可能是",
        "replace": "把 {name} 换成{hint}。",
        "your_value": "你自己的值",
        "source": "来源：{link}",
        "source_text": "依据：{text}",
        "faq_name": "MindIE LLM FAQ",
        "details": "查看详情",
        "details_title": "详情：{title}",
        "recognised": "在你的消息中识别到",
        "resolved": "✅ 已解决",
        "resolved_by": "✅ {user} 已标记为解决。",
        "resolved_ack": "已标记为解决，感谢反馈！",
        "requested_by": "🙋 {user} 已请求人工支持。",
        "question_from": "{user} 的问题：",
        "chitchat": "不客气！随时贴报错或日志给我，我来看看。",
        "details_expired": "这些详情已过期，请带上日志重新问我。",
        "escalation_post": "{group}{user} 请求人工支持：{where}。",
        "escalation_where_thread": "该话题 {link}",
        "escalation_where_dm": "与机器人的私信",
        "escalation_where_private": "{channel} 中的一条仅本人可见的回答",
        "escalation_question": "问题：",
        "open_thread": "打开话题",
        "env_mismatch": "⚠️ 你贴出的版本不配套：{pair} → {fix}",
        "env_table": "配套表",
        "code_known": "我认识这个错误码，但无法确定你的情况该用哪种解决方法：下面是先要做的几步。",
        "channel_off": "管理员已在本频道关闭我。请用 `/mindie-help <问题>` 或私信我提问。",
        "escalated_channel": "已在 {channel} 通知支持团队，会有人在这里跟进。",
        "no_escalation_dm": "私信中无法呼叫支持团队：没有配置支持频道。请到支持频道提问。",
        "thanks_up": "感谢反馈 👍",
        "thanks_down": "已记录 👎。也可以在频道里找人工支持。",
        "thanks_changed": "（已修改你之前的投票）",
        "escalated": "{group}{user} 请求人工支持：机器人没有可信的答案。",
        "escalated_ack": "已通知支持团队。",
        "escalated_private": "你的问题只有你自己可见，因此没有贴出：请在频道里补充给支持团队。",
        "already_escalated": "已经请求过人工支持（由 {user} 发起），他们会在话题中回复。",
        "escalated_recently": "你几分钟前已请求过人工支持，支持团队已收到通知。",
        "someone": "有人",
        "not_in_channel": "我无法在这个会话中发消息。请用 `/invite @mindie-help` 邀请我，或直接联系支持团队。",
        "rate_limited": "你的请求太频繁了，请约 {seconds} 秒后再试。",
        "busy": "当前问题较多，请一分钟后再试。",
        "file_slow": "{name} 只在时限内下载了开头部分。",
        "file_skipped": "已跳过文件 {name}：{reason}。",
        "truncated_file": "{name} 只读取了开头和结尾各 {kb} KB，以及其间的报错行。",
    },
}


def label(lang: str, key: str, **fmt: Any) -> str:
    """A string of the bot's own in the reply language. Its `<` and `>` (as in `<question>`) are escaped, since
    Slack reads `<...>` as a control sequence; values passed in are already mrkdwn (mentions, links, escaped text)."""
    table = LABELS.get(lang, LABELS["en"])
    text = table.get(key, LABELS["en"][key]).replace("<", "&lt;").replace(">", "&gt;")
    return text.format(**fmt) if fmt else text


@dataclass
class Rendered:
    """What chat.postMessage / response_url need: fallback text and blocks."""

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)

    def as_kwargs(self) -> dict[str, Any]:
        return {"text": self.text, "blocks": self.blocks}


# --- text helpers ---------------------------------------------------------------------------------


def esc(text: str) -> str:
    """The one escaping function for anything user-derived in a message (blocks and the fallback `text` alike):
    the three characters Slack's mrkdwn treats as control characters. With `<` escaped, no `<!channel>`,
    `<!subteam^...>`, `<@U...>` or `<https://evil|label>` in a user's text can ping or disguise a link."""
    return (text or "").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(text: str, limit: int, ellipsis: str = "…") -> str:
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(ellipsis))] + ellipsis


def clip_mrkdwn(text: str, limit: int = MAX_SECTION) -> str:
    """Clip mrkdwn, closing an open ``` fence so the rest of the message still renders."""
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - 6)]
    if cut.count("```") % 2 == 1:
        return cut[: max(0, limit - 6)].rstrip() + "…\n```"
    return cut.rstrip() + " …"


def clip_escaped(text: str, limit: int) -> str:
    """clip() that never cuts an entity such as &lt; in two (a lone "&l" would show as text, harmlessly, but
    an "&" left bare is what esc() exists to prevent)."""
    clipped = clip(text, limit)
    amp = clipped.rfind("&", max(0, len(clipped) - 6))
    if amp != -1 and ";" not in clipped[amp:]:
        clipped = clipped[:amp] + "…"
    return clipped


def pct(confidence: float) -> str:
    return f"{round(max(0.0, min(1.0, confidence)) * 100)}%"


def code_block(command: str) -> str:
    body = (command or "").replace("```", "`\u200b``")
    return f"```{esc(body)}```"


def inline_code(text: str) -> str:
    return "`" + esc(text.replace("`", "ʹ")) + "`" if text.strip() else ""


def button_value(data: dict[str, Any]) -> str:
    value = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    if len(value) <= MAX_BUTTON_VALUE:
        return value
    # Shorten the longest string fields until it fits.
    data = dict(data)
    for key in sorted(data, key=lambda k: -len(str(data[k]))):
        if isinstance(data[key], str):
            over = len(json.dumps(data, ensure_ascii=False, separators=(",", ":"))) - MAX_BUTTON_VALUE
            if over <= 0:
                break
            data[key] = data[key][: max(0, len(data[key]) - over - 8)]
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))[:MAX_BUTTON_VALUE]


def parse_value(value: Any) -> dict[str, str]:
    """A button's value, keeping only string fields: a value is JSON the bot wrote, but a payload can carry
    anything (`"f": 5` raised in a listener, issue #11 finding 12)."""
    if not isinstance(value, str):
        return {}
    try:
        data = json.loads(value or "{}")
    except (TypeError, ValueError, RecursionError):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(data, dict) else {}


def section(text: str) -> dict[str, Any]:
    """A mrkdwn section; enforce_limits() clips it later (and notes that it did)."""
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def context(*texts: str) -> dict[str, Any]:
    elements = [{"type": "mrkdwn", "text": t} for t in texts if t][:MAX_CONTEXT_ELEMENTS]
    return {"type": "context", "elements": elements}


def header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": clip(" ".join(text.split()) or "mindie-help", MAX_HEADER), "emoji": True}}


def button(text: str, action_id: str, value: dict[str, Any], style: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": clip(text, MAX_BUTTON_TEXT), "emoji": True},
        "action_id": action_id,
        "value": button_value(value),
    }
    if style:
        out["style"] = style
    return out


# --- small replies --------------------------------------------------------------------------------


def render_environment_report(report: Any, lang: str = "en") -> Rendered:
    """`/mindie-help env`: the report of a paste, or (nothing found) the commands that collect the facts."""
    from bot.environment.checker import all_commands
    from bot.environment.present import commands_only, section as environment_section
    from bot.slack.env_blocks import fallback, section_blocks

    sec = environment_section(report, lang) if report is not None else commands_only(lang, all_commands())
    sec.intro = None  # asked for explicitly: no need to say it is an environment dump
    return Rendered(text=fallback(sec), blocks=enforce_limits(section_blocks(sec)[1:], lang))


def render_text(text: str, lang: str = "en") -> Rendered:
    """A short plain message (usage, error, acknowledgement) as one section plus fallback."""
    return Rendered(text=clip(text, MAX_FALLBACK), blocks=enforce_limits([section(text)], lang))


def render_usage(lang: str = "en") -> Rendered:
    return render_text(label(lang, "usage"), lang)


def render_error(ref: str, lang: str = "en") -> Rendered:
    return render_text(label(lang, "error", ref=ref), lang)


# --- limits ---------------------------------------------------------------------------------------


def _block_chars(block: dict[str, Any]) -> int:
    total = 0
    if "text" in block and isinstance(block["text"], dict):
        total += len(block["text"].get("text", ""))
    for element in block.get("elements", []) or []:
        if isinstance(element, dict):
            text = element.get("text")
            total += len(text.get("text", "")) if isinstance(text, dict) else len(text or "")
            total += len(element.get("value", "") or "")
    return total


def enforce_limits(blocks: list[dict[str, Any]], lang: str = "en", tail: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Clip every text to its field limit and keep the message within the block and character budget.

    `tail` blocks (the buttons) are always kept at the end; when anything is clipped or dropped, a context
    note at the end says so.
    """
    tail = list(tail or [])
    clipped = 0
    fixed: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "header":
            original = block["text"]["text"]
            block["text"]["text"] = clip(original, MAX_HEADER)
            clipped += block["text"]["text"] != original
        elif kind == "section" and "text" in block:
            original = block["text"]["text"]
            block["text"]["text"] = clip_mrkdwn(original, MAX_SECTION)
            clipped += block["text"]["text"] != original
        elif kind == "context":
            clipped += len(block.get("elements", [])) > MAX_CONTEXT_ELEMENTS
            block["elements"] = block.get("elements", [])[:MAX_CONTEXT_ELEMENTS]
            for element in block["elements"]:
                if element.get("type") in ("mrkdwn", "plain_text"):
                    original = element["text"]
                    element["text"] = clip_mrkdwn(original, MAX_SECTION)
                    clipped += element["text"] != original
        fixed.append(block)

    budget_blocks = MAX_BLOCKS - len(tail) - 1  # one slot for the trim note
    budget_chars = MAX_MESSAGE_CHARS - sum(_block_chars(b) for b in tail) - 500
    kept: list[dict[str, Any]] = []
    used = 0
    for block in fixed:
        size = _block_chars(block)
        if len(kept) >= budget_blocks or used + size > budget_chars:
            break
        kept.append(block)
        used += size
    dropped = len(fixed) - len(kept)
    if dropped:
        kept.append(context(label(lang, "trimmed", what=label(lang, "more_hidden", n=dropped))))
    elif clipped:
        kept.append(context(label(lang, "trimmed", what=label(lang, "long_text"))))
    return kept + tail
