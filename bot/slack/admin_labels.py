"""The bilingual strings of the admin surface (`/mindie-help help|stats|reload|channel`), the Diagnose shortcut and
App Home. Kept apart from blocks.LABELS (the answers' strings) so the two can change independently; `say()` falls
back to blocks.label() for a key that is not here, so those strings are reused rather than copied."""

from __future__ import annotations

from typing import Any

from bot.slack import blocks as bk

ADMIN_LABELS: dict[str, dict[str, str]] = {
    "en": {
        "subcommands": (
            "*More commands*\n"
            "• `/mindie-help help`: this message (`/mindie-help 帮助` in Chinese).\n"
            "• `/mindie-help stats`: answered and not-recognised questions, 👍/👎 and escalations over the last 7 and 30 days, "
            "and the most frequent questions I could not answer.\n"
            "• `/mindie-help reload` _(admins)_: reload the knowledge base and its index, without a restart.\n"
            "• `/mindie-help channel auto|mention|off|reset` _(admins)_: in this channel, answer pasted logs on my own (auto), "
            "only when mentioned (mention), not at all (off: mentions get a private note; `/mindie-help` still works), or as configured (reset). "
            "`/mindie-help channel` shows the current mode.\n"
            "• *Diagnose with mindie-help* in any message's ⋯ menu (More message shortcuts): I answer that message in its thread.\n"
            "• My *Home* tab shows these figures and how to use me."
        ),
        "stats_title": "mindie-help statistics",
        "window": "Last {days} days",
        "figures": "{answered} answered · {abstained} not recognised · {up} 👍 · {down} 👎 · {escalations} escalations",
        "gaps_title": "Most frequent questions I could not answer (last {days} days)",
        "gap_line": "{n}. {excerpt} ({count}×)",
        "no_gaps": "None: every question was recognised.",
        "knowledge": "Knowledge base: {entries} entries · corpus `{digest}`",
        "stats_unavailable": "The statistics are not available right now (the database is not answering); please try again later.",
        "not_admin": "Sorry, `/mindie-help {what}` is only for the bot's admins. Please ask {who}.",
        "admins_none": "your workspace admins (no bot admin is set: `MINDIE_HELP_ADMIN_IDS`)",
        "reloading": "Reloading the knowledge base… I'll tell you here when it's done.",
        "reload_busy": "A reload is already running; try again in a moment.",
        "reloaded": "Reloaded: {entries} entries (was {before}) · corpus `{digest}` · dense search: {dense} · {seconds} s.",
        "reload_added": "New: {ids}.",
        "reload_removed": "Gone: {ids}.",
        "reload_replicas": "The other replicas reload within a minute.",
        "reload_not_shared": "The database did not answer, so other replicas (if any) were not told to reload.",
        "reload_invalid": "The knowledge base was *not* reloaded: the corpus has {n} problem(s). I keep answering with the current one ({entries} entries). Fix these and run `/mindie-help reload` again:",
        "reload_failed": "The knowledge base was *not* reloaded (error ref `{ref}`); I keep answering with the current one ({entries} entries).",
        "reload_degraded": "The knowledge base was *not* reloaded: the new engine has no dense search ({dense}). I keep answering with the current one ({entries} entries); check the model and the index folder, then run `/mindie-help reload` again.",
        "mode_auto": "I answer pasted logs on my own, in their thread, when I'm confident",
        "mode_mention": "I answer only when mentioned (or asked with `/mindie-help`)",
        "mode_off": "I don't answer in this channel (a mention gets a private note); `/mindie-help` still works",
        "channel_set": "Auto-replies in this channel: *{mode}*: {meaning}. Stored for every replica (the others apply it within 10 s).",
        "channel_reset": "This channel is back to the default, *{mode}*: {meaning}.",
        "channel_cooldown_kept": " Its own cooldown of {seconds} s stays (`mindie-help channel set --clear` removes it).",
        "channel_show": "Auto-replies in this channel: *{mode}* ({source}): {meaning}.",
        "source_channel": "set for this channel",
        "source_default": "the default",
        "channel_not_here": "Run `/mindie-help channel …` in the channel itself; direct messages are always answered.",
        "channel_failed": "The channel's mode could not be changed right now (the database is not answering); please try again.",
        "nothing_to_diagnose": "That message has no text or file I can read, so there is nothing to diagnose.",
        "home_title": "mindie-help",
        "home_howto": (
            "*How to use me*\n"
            "• Paste a MindIE log in a channel I'm in: when I recognise the error, I answer in its thread.\n"
            "• Mention me (`@mindie-help <log or question>`), send me a direct message, or share a `.log`/`.txt` file with me.\n"
            "• `/mindie-help <error or question>`: an answer only you see, with a button to share it.\n"
            "• *Diagnose with mindie-help* in any message's ⋯ menu: I answer that message in its thread.\n"
            "• `/mindie-help help` lists every command; `/mindie-help stats` shows the figures below."
        ),
        "home_howto_other": "中文：直接用中文提问或粘贴日志，我会用中文回答；`/mindie-help 帮助` 查看全部命令。",
        "home_activity": "Activity",
        "home_updated": "Updated {when} UTC.",
    },
    "zh": {
        "subcommands": (
            "*更多命令*\n"
            "• `/mindie-help 帮助`：本帮助（英文：`/mindie-help help`）。\n"
            "• `/mindie-help stats`：最近 7 天和 30 天已回答、未识别的问题数，👍/👎 和人工求助次数，以及最常见的未能回答的问题。\n"
            "• `/mindie-help reload` _（管理员）_：不重启即重新加载知识库及其索引。\n"
            "• `/mindie-help channel auto|mention|off|reset` _（管理员）_：在本频道中，自动回答粘贴的日志（auto）、"
            "仅在被 @ 时回答（mention）、完全不回答（off：@我 只收到一条仅本人可见的提示；`/mindie-help` 仍可用），或恢复默认配置（reset）。`/mindie-help channel` 查看当前模式。\n"
            "• 在任意消息的 ⋯ 菜单（更多消息快捷方式）中选择 *Diagnose with mindie-help*：我会在该消息的话题中回答。\n"
            "• 我的 *主页* 标签页展示这些统计和用法。"
        ),
        "stats_title": "mindie-help 统计",
        "window": "最近 {days} 天",
        "figures": "已回答 {answered} · 未识别 {abstained} · 👍 {up} · 👎 {down} · 人工求助 {escalations}",
        "gaps_title": "最常见的未能回答的问题（最近 {days} 天）",
        "gap_line": "{n}. {excerpt}（{count} 次）",
        "no_gaps": "无：所有问题都已识别。",
        "knowledge": "知识库：{entries} 条 · 语料 `{digest}`",
        "stats_unavailable": "暂时无法获取统计（数据库无响应），请稍后再试。",
        "not_admin": "抱歉，`/mindie-help {what}` 仅限机器人管理员使用。请联系 {who}。",
        "admins_none": "工作区管理员（尚未设置机器人管理员：`MINDIE_HELP_ADMIN_IDS`）",
        "reloading": "正在重新加载知识库……完成后会在这里告诉你。",
        "reload_busy": "已有一次重新加载正在进行，请稍后再试。",
        "reloaded": "已重新加载：{entries} 条（原 {before} 条）· 语料 `{digest}` · 向量检索：{dense} · {seconds} 秒。",
        "reload_added": "新增：{ids}。",
        "reload_removed": "移除：{ids}。",
        "reload_replicas": "其他副本会在一分钟内重新加载。",
        "reload_not_shared": "数据库无响应，其他副本（如有）未收到重新加载的通知。",
        "reload_invalid": "知识库*未*重新加载：语料有 {n} 个问题。我继续使用当前知识库（{entries} 条）。请修正以下问题后再运行 `/mindie-help reload`：",
        "reload_failed": "知识库*未*重新加载（错误编号 `{ref}`）；我继续使用当前知识库（{entries} 条）。",
        "reload_degraded": "知识库*未*重新加载：新引擎无法使用向量检索（{dense}）。我继续使用当前知识库（{entries} 条）；请检查模型和索引目录后再运行 `/mindie-help reload`。",
        "mode_auto": "我会在有把握时自动在话题中回答粘贴的日志",
        "mode_mention": "只有被 @（或使用 `/mindie-help`）时我才回答",
        "mode_off": "我在本频道不回答（@我 会收到仅本人可见的提示）；`/mindie-help` 仍然可用",
        "channel_set": "本频道的自动回复：*{mode}*：{meaning}。已保存，所有副本共享（其他副本 10 秒内生效）。",
        "channel_reset": "本频道已恢复默认：*{mode}*：{meaning}。",
        "channel_cooldown_kept": "本频道单独设置的冷却时间 {seconds} 秒保持不变（`mindie-help channel set --clear` 可清除）。",
        "channel_show": "本频道的自动回复：*{mode}*（{source}）：{meaning}。",
        "source_channel": "本频道单独设置",
        "source_default": "默认配置",
        "channel_not_here": "请在频道中运行 `/mindie-help channel …`；私信总是会回答。",
        "channel_failed": "暂时无法修改本频道的模式（数据库无响应），请稍后再试。",
        "nothing_to_diagnose": "这条消息没有我能读取的文字或文件，无法诊断。",
        "home_title": "mindie-help",
        "home_howto": (
            "*使用方法*\n"
            "• 在我所在的频道粘贴 MindIE 日志：识别出报错时，我会在话题中回答。\n"
            "• @我（`@mindie-help <日志或问题>`）、私信我，或发给我 `.log`/`.txt` 文件。\n"
            "• `/mindie-help <报错或问题>`：仅你可见的回答，可一键分享。\n"
            "• 在任意消息的 ⋯ 菜单中选择 *Diagnose with mindie-help*：我会在该消息的话题中回答。\n"
            "• `/mindie-help 帮助` 列出全部命令；`/mindie-help stats` 查看下面的统计。"
        ),
        "home_howto_other": "English: ask or paste a log in English and I answer in English; `/mindie-help help` lists every command.",
        "home_activity": "使用情况",
        "home_updated": "更新于 {when} UTC。",
    },
}


def say(lang: str, key: str, **fmt: Any) -> str:
    """An admin-surface string in `lang` (English when missing); keys it does not know come from blocks.label()."""
    table = ADMIN_LABELS.get(lang, ADMIN_LABELS["en"])
    text = table.get(key, ADMIN_LABELS["en"].get(key))
    if text is None:
        return bk.label(lang, key, **fmt)
    return text.format(**fmt) if fmt else text
