"""Slack payloads as the bot reads them: lone surrogates replaced, fields of the wrong type dropped, malformed
payloads refused, before Bolt or a listener looks at them.

Slack's own payloads are well formed; these rules are for whatever passes the signature check anyway (a doctored
replay, a buggy proxy, a Socket Mode envelope) so that nothing reads a list where it expects a string
(issue #11, findings 5 and 12: `actions: []` and a lone `\\ud800` raised in listeners).
"""

from __future__ import annotations

from typing import Any

from bot.engine.normalize import scrub_surrogates

MAX_DEPTH = 64
_S = (str,)
_ID = (str, dict)
_OPT_STR = (str, type(None))

_TOP: dict[str, tuple[type, ...]] = {
    "type": _S, "token": _S, "team_id": _S, "enterprise_id": _OPT_STR, "api_app_id": _S, "event_id": _S,
    "response_url": _S, "trigger_id": _S, "user_id": _S, "channel_id": _S, "text": _S, "command": _S, "callback_id": _S, "message_ts": _S,
    "team": (str, dict, type(None)), "enterprise": (str, dict, type(None)), "user": _ID, "channel": _ID,
    "container": (dict,), "view": (dict,), "message": (dict,), "event": (dict,), "actions": (list,),
    "authorizations": (list,), "is_enterprise_install": (bool, str), "is_ext_shared_channel": (bool,),
}
_NESTED_IDS: dict[str, tuple[type, ...]] = {"id": _S, "team_id": _OPT_STR, "enterprise_id": _OPT_STR, "name": _S, "username": _S, "domain": _S}
_CONTAINER: dict[str, tuple[type, ...]] = {"type": _S, "message_ts": _S, "channel_id": _S, "thread_ts": _S, "is_ephemeral": (bool,)}
_AUTHORIZATION: dict[str, tuple[type, ...]] = {"enterprise_id": _OPT_STR, "team_id": _OPT_STR, "user_id": _S, "is_bot": (bool,), "is_enterprise_install": (bool,)}
_EVENT: dict[str, tuple[type, ...]] = {
    "type": _S, "subtype": _S, "user": _S, "bot_id": _S, "channel": _S, "channel_type": _S, "ts": _S, "thread_ts": _S,
    "event_ts": _S, "text": _S, "team": _S, "user_team": _S, "source_team": _S, "hidden": (bool,), "files": (list,),
    "attachments": (list,), "blocks": (list,), "message": (dict,), "previous_message": (dict,), "bot_profile": (dict,),
}
_FILE: dict[str, tuple[type, ...]] = {
    "id": _S, "name": _S, "title": _S, "mimetype": _S, "filetype": _S, "url_private": _S, "url_private_download": _S,
    "mode": _S, "file_access": _S, "size": (int,),
}
_ACTION: dict[str, tuple[type, ...]] = {"type": _S, "action_id": _S, "block_id": _S, "value": _S, "action_ts": _S, "text": (dict,)}


class _TooDeep(Exception):
    pass


def _scrub(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise _TooDeep
    if isinstance(value, str):
        return scrub_surrogates(value)
    if isinstance(value, dict):
        return {scrub_surrogates(k) if isinstance(k, str) else k: _scrub(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, depth + 1) for v in value]
    return value


def _keep_typed(data: dict[str, Any], schema: dict[str, tuple[type, ...]]) -> None:
    for key, types in schema.items():
        if key in data and not isinstance(data[key], types):
            del data[key]


def _dicts(data: dict[str, Any], key: str, schema: dict[str, tuple[type, ...]]) -> None:
    """A list of objects: items that are not objects dropped, the fields of the rest type-checked."""
    if isinstance(data.get(key), list):
        data[key] = [item for item in data[key] if isinstance(item, dict)]
        for item in data[key]:
            _keep_typed(item, schema)


def sanitize(body: Any) -> dict[str, Any] | None:
    """The payload with its strings scrubbed and its odd fields dropped, or None when it cannot be read at all."""
    if not isinstance(body, dict):
        return None
    try:
        body = _scrub(body)
    except _TooDeep:
        return None
    _keep_typed(body, _TOP)
    for key in ("user", "channel", "team", "enterprise"):
        if isinstance(body.get(key), dict):
            _keep_typed(body[key], _NESTED_IDS)
    if isinstance(body.get("container"), dict):
        _keep_typed(body["container"], _CONTAINER)
    _dicts(body, "authorizations", _AUTHORIZATION)
    kind = body.get("type")
    if kind == "event_callback":
        event = body.get("event")
        if not isinstance(event, dict):
            return None
        _keep_typed(event, _EVENT)
        if not isinstance(event.get("type"), str):
            return None
        _dicts(event, "files", _FILE)
    if kind == "message_action" and isinstance(body.get("message"), dict):  # a message shortcut: the message it was used on
        _keep_typed(body["message"], _EVENT)
        _dicts(body["message"], "files", _FILE)
    if kind in ("block_actions", "interactive_message"):
        _dicts(body, "actions", _ACTION)
        actions = body.get("actions")
        if not actions or (kind == "block_actions" and not isinstance(actions[0].get("action_id"), str)):
            return None
    return body


def sanitize_file(info: Any) -> dict[str, Any] | None:
    """A file object from files.info, read with the same rules as one inside an event."""
    if not isinstance(info, dict):
        return None
    try:
        info = _scrub(info)
    except _TooDeep:
        return None
    _keep_typed(info, _FILE)
    return info


def id_of(body: dict[str, Any], key: str) -> str | None:
    """`user`/`channel`/`team` as Slack sends it: a plain id in events, an object with an id elsewhere."""
    value = body.get(key)
    if isinstance(value, dict):
        value = value.get("id")
    return value if isinstance(value, str) and value else None


def text_of(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None
