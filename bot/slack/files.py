"""Download text files shared in Slack (logs, .txt, snippets) with the bot token, size-capped, binaries refused."""

from __future__ import annotations

import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from bot.engine.normalize import Sampler, decode_input, readable_runs

TEXT_EXTENSIONS = (
    ".log", ".txt", ".out", ".err", ".trace", ".text", ".json", ".yaml", ".yml", ".ini", ".cfg", ".conf",
    ".csv", ".md", ".py", ".sh", ".toml", ".xml",
)
# Slack `filetype` values that are plain text, including code snippets.
TEXT_FILETYPES = {
    "text", "txt", "log", "plain", "csv", "json", "yaml", "yml", "xml", "ini", "toml", "markdown", "md",
    "python", "shell", "bash", "sh", "diff", "javascript", "java", "c", "cpp", "go", "rust", "sql", "properties",
}
BINARY_FILETYPES = {"png", "jpg", "jpeg", "gif", "pdf", "zip", "gzip", "gz", "tar", "binary", "mp4", "mov", "docx", "xlsx", "pptx"}
_CHUNK = 64 * 1024
_READ_TIMEOUT = 5.0  # seconds one socket read may wait; the total is bounded by the deadline


@dataclass(frozen=True)
class FileText:
    """One shared file: its text, or why it was skipped."""

    name: str
    text: str = ""
    truncated: bool = False
    skipped: str | None = None  # reason, e.g. "binary", "not a text file", "download failed"
    stopped: str = ""  # "size" or "time" when the download was cut short

    @property
    def ok(self) -> bool:
        return self.skipped is None and bool(self.text.strip())


def file_name(info: dict[str, Any]) -> str:
    return str(info.get("name") or info.get("title") or info.get("id") or "file")


def needs_info(info: dict[str, Any]) -> bool:
    """Events sometimes carry only a stub (`file_access: check_file_info`); then files.info has the details."""
    return info.get("file_access") == "check_file_info" or not (info.get("url_private_download") or info.get("url_private"))


def looks_textual(info: dict[str, Any]) -> bool:
    name = file_name(info).lower()
    filetype = str(info.get("filetype") or "").lower()
    mimetype = str(info.get("mimetype") or "").lower()
    if filetype in BINARY_FILETYPES or mimetype.startswith(("image/", "video/", "audio/")):
        return False
    if info.get("mode") == "snippet":
        return True
    if name.endswith(TEXT_EXTENSIONS) or filetype in TEXT_FILETYPES:
        return True
    return mimetype.startswith("text/") or mimetype in ("application/json", "application/x-yaml", "application/xml")


def decode_text(data: bytes) -> str | None:
    """The text of a file (UTF-16, UTF-8 or GB18030; see normalize.decode_input), with binary content after the
    text (a core dump appended to a log) reduced to its readable strings; None when it is binary throughout."""
    text, binary_from = decode_input(data)
    if binary_from == 0:
        return None
    if binary_from is not None:
        text = text[:binary_from] + "\n" + readable_runs(text[binary_from:])
    return text


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Never follow redirects: they would carry the bot token elsewhere (Slack redirects to a login page on auth errors)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D401, ANN001
        return None


# Only HTTP(S): no file://, ftp:// or data: handlers, whatever URL a payload carries.
_OPENER = urllib.request.OpenerDirector()
for _handler in (urllib.request.ProxyHandler(), urllib.request.HTTPHandler(), urllib.request.HTTPSHandler(),
                 urllib.request.HTTPDefaultErrorHandler(), urllib.request.HTTPErrorProcessor(), _NoRedirect()):
    _OPENER.add_handler(_handler)

Origin = tuple[str, str, int]  # scheme, host, port
_DEFAULT_PORTS = {"https": 443, "http": 80}


def origin_of(url: str) -> Origin | None:
    """scheme, lower-case host and port (the scheme's default when none is given), or None when unreadable."""
    try:
        parsed = urllib.parse.urlsplit(url)
        port = parsed.port or _DEFAULT_PORTS.get(parsed.scheme.lower())
    except ValueError:
        return None
    if not parsed.hostname or port is None:
        return None
    return parsed.scheme.lower(), parsed.hostname.lower(), port


def host_allowed(url: str, api_origin: Origin | None = None) -> bool:
    """https to Slack's own file hosts, or exactly the scheme, host and port of MINDIE_HELP_SLACK_API_URL (a proxy,
    or the tests' fake Slack). The bot token is sent to nothing else."""
    origin = origin_of(url)
    if origin is None:
        return False
    scheme, host, port = origin
    if scheme == "https" and port == 443 and (host == "slack.com" or host.endswith((".slack.com", ".slack-edge.com"))):
        return True
    return api_origin is not None and origin == api_origin


def download_text(
    info: dict[str, Any], *, token: str, max_bytes: int, api_origin: Origin | None = None, max_download: int | None = None,
    deadline: float | None = None,
) -> FileText:
    """Fetch url_private with the bot token: at most max_download bytes (of which an errors-first sample of
    max_bytes is kept) and nothing after the deadline (time.monotonic()); refuse binaries and non-text types."""
    name = file_name(info)
    if not looks_textual(info):
        return FileText(name, skipped="not a text file")
    url = info.get("url_private_download") or info.get("url_private")
    if not isinstance(url, str) or not url:
        return FileText(name, skipped="no download link (is the files:read scope granted?)")
    if not host_allowed(url, api_origin):
        return FileText(name, skipped="download host not allowed")
    deadline = deadline if deadline is not None else time.monotonic() + 15.0
    limit = max_download if max_download is not None else 8 * max_bytes
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}", "User-Agent": "mindie-help"})
    sampler = Sampler(max_bytes)
    stopped = ""
    try:
        with _OPENER.open(request, timeout=max(0.1, min(_READ_TIMEOUT, deadline - time.monotonic()))) as response:
            content_type = (response.headers.get("Content-Type") or "").lower()
            if content_type.startswith("text/html"):
                return FileText(name, skipped="Slack returned a web page instead of the file (check the files:read scope)")
            while True:
                if time.monotonic() > deadline:
                    stopped = "time"
                    break
                if sampler.total >= limit:
                    stopped = "size"
                    break
                block = response.read1(min(_CHUNK, limit - sampler.total))  # returns what has arrived: a drip cannot hold it
                if not block:
                    break
                sampler.feed(block)
    except urllib.error.HTTPError as exc:
        return FileText(name, skipped=f"download failed (HTTP {exc.code})")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return FileText(name, skipped=f"download failed ({type(exc).__name__})")
    if stopped == "time" and sampler.total == 0:
        return FileText(name, skipped="download too slow")
    text = decode_text(sampler.result())
    if text is None:
        return FileText(name, skipped="binary content")
    return FileText(name, text=text, truncated=sampler.truncated or bool(stopped), stopped=stopped)
