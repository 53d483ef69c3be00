"""Download text files shared in Slack (logs, .txt, snippets) with the bot token, size-capped, binaries refused."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from bot.engine.normalize import looks_binary, read_sampled

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


@dataclass(frozen=True)
class FileText:
    """One shared file: its text, or why it was skipped."""

    name: str
    text: str = ""
    truncated: bool = False
    skipped: str | None = None  # reason, e.g. "binary", "not a text file", "download failed"

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


def decode_text(data: bytes) -> str:
    """UTF-8 first (a cut multi-byte tail is tolerated), then GB18030 (common for Chinese logs), then lenient UTF-8."""
    for encoding in ("utf-8", "gb18030"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError as exc:
            if encoding == "utf-8" and exc.start >= len(data) - 3:
                return data[: exc.start].decode("utf-8")
    return data.decode("utf-8", errors="replace")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Never follow redirects: they would carry the bot token elsewhere (Slack redirects to a login page on auth errors)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D401, ANN001
        return None


_OPENER = urllib.request.build_opener(_NoRedirect())


def host_allowed(url: str, extra_hosts: set[str]) -> bool:
    parsed = urllib.parse.urlparse(url)
    host = (parsed.hostname or "").lower()
    if parsed.scheme == "https" and (host == "slack.com" or host.endswith(".slack.com") or host.endswith(".slack-edge.com")):
        return True
    netloc = (parsed.netloc or "").lower()
    return netloc in extra_hosts or host in extra_hosts


def download_text(
    info: dict[str, Any], *, token: str, max_bytes: int, extra_hosts: set[str] | None = None, timeout: float = 15.0
) -> FileText:
    """Fetch url_private with the bot token; read at most max_bytes; refuse binaries and non-text types."""
    name = file_name(info)
    if not looks_textual(info):
        return FileText(name, skipped="not a text file")
    url = info.get("url_private_download") or info.get("url_private")
    if not url:
        return FileText(name, skipped="no download link (is the files:read scope granted?)")
    if not host_allowed(url, extra_hosts or set()):
        return FileText(name, skipped="download host not allowed")
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}", "User-Agent": "mindie-help"})
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            content_type = (response.headers.get("Content-Type") or "").lower()
            if content_type.startswith("text/html"):
                return FileText(name, skipped="Slack returned a web page instead of the file (check the files:read scope)")
            data, size = read_sampled(response, max_bytes, _CHUNK)
            truncated = size > max_bytes
    except urllib.error.HTTPError as exc:
        return FileText(name, skipped=f"download failed (HTTP {exc.code})")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return FileText(name, skipped=f"download failed ({type(exc).__name__})")
    if looks_binary(data):
        return FileText(name, skipped="binary content")
    return FileText(name, text=decode_text(data), truncated=truncated)
