"""The host: `python --version`, `uname -m`, `cat /etc/os-release`, and the same facts as collect_env,
`llamafactory-cli env` and `lscpu` print them."""

from __future__ import annotations

import re

from bot.environment.parsers import MAX_LINE, TEXT, TOOL, Parsed, worth

_PYTHON_CMD = re.compile(r"^\s*Python\s+(3\.\d{1,2}(?:\.\d{1,3})?)\s*$")
_PYTHON_KEY = re.compile(r"^\s*(?:[-*•]\s*)?`?python`?(?:\s*(?:version|版本))?\s*(?:[:：=]=?)\s*v?(3\.\d{1,2}(?:\.\d{1,3})?)\b"
                         r"(?!\.\d)(?:\s*(?:\(.*|\[.*)?)?$", re.IGNORECASE)
_UNAME = re.compile(r"^\s*(aarch64|x86_64|arm64)\s*$")
_ARCH_KEY = re.compile(r"^\s*(?:Architecture|arch|CPU architecture)\s*[:=：]\s*(aarch64|x86_64|arm64)\s*$", re.IGNORECASE)
_ARCH_IN = re.compile(r"\((aarch64|x86_64)\)\s*$|-(aarch64|x86_64)-with-glibc")
_OS_RELEASE = re.compile(r'^\s*(PRETTY_NAME|NAME|VERSION_ID|VERSION|ID|ID_LIKE|HOME_URL|SUPPORT_URL|BUG_REPORT_URL|'
                         r'VERSION_CODENAME|UBUNTU_CODENAME|ANSI_COLOR|CPE_NAME|PRIVACY_POLICY_URL)="?([^"]*)"?\s*$')
_OS_KEY = re.compile(r"^\s*(?:[-*•]\s*)?(?:OS|操作系统)\s*[:：]\s*(.+?)\s*(?:\((?:aarch64|x86_64)\))?\s*$")
_DISTRO = re.compile(r"ubuntu|debian|centos|euler|kylin|麒麟|uos|ctyun|bclinux|alios|culinux|rhel|red ?hat|rocky|suse|"
                     r"anolis|alibaba cloud linux|linux", re.IGNORECASE)
_GLIBC = re.compile(r"\bglibc[- ]?(2\.\d{1,2})\b|ldd \(GNU libc\) (2\.\d{1,2})\b", re.IGNORECASE)


_WORDS = ("python", "aarch64", "x86_64", "arm64", "glibc", "gnu libc", "=", "os", "操作系统", "arch")


def parse(lines: list[str]) -> Parsed:
    out = Parsed()
    os_release: dict[str, tuple[str, int]] = {}
    for i, line in enumerate(lines):
        if len(line) > MAX_LINE or not worth(line, _WORDS):
            continue
        if (cmd := _PYTHON_CMD.match(line)) is not None:
            out.add("python", cmd.group(1), "python --version", i, TOOL)
        elif (key := _PYTHON_KEY.match(line)) is not None:
            out.add("python", key.group(1), "text", i, TEXT)
        if (uname := _UNAME.match(line)) is not None:
            out.add("arch", _arch(uname.group(1)), "uname -m", i, TOOL)
        elif (arch := _ARCH_KEY.match(line)) is not None:
            out.add("arch", _arch(arch.group(1)), "text", i, TEXT)
        elif (inline := _ARCH_IN.search(line)) is not None:
            out.add("arch", _arch(inline.group(1) or inline.group(2)), "text", i, TEXT)
        if (release := _OS_RELEASE.match(line)) is not None:
            os_release[release.group(1)] = (release.group(2).strip(), i)
            out.consumed.add(i)
        elif (os_line := _OS_KEY.match(line)) is not None and len(os_line.group(1)) < 80 and _DISTRO.search(os_line.group(1)):
            out.add("os", os_line.group(1), "text", i, TEXT)
        if (glibc := _GLIBC.search(line)) is not None:
            out.add("glibc", glibc.group(1) or glibc.group(2), "text", i, TEXT)
    if "PRETTY_NAME" in os_release:
        value, line_no = os_release["PRETTY_NAME"]
        out.add("os", value, "/etc/os-release", line_no, TOOL)
    elif "NAME" in os_release:
        value, line_no = os_release["NAME"]
        version = os_release.get("VERSION_ID", ("", 0))[0]
        out.add("os", f"{value} {version}".strip(), "/etc/os-release", line_no, TOOL)
    return out


def _arch(value: str) -> str:
    return "aarch64" if value.lower() in ("aarch64", "arm64") else "x86_64"
