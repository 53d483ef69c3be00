#!/usr/bin/env python3
"""Install the CPU build of torch into the running interpreter's environment (scripts/bootstrap.sh calls it
with .venv/bin/python, before the project, so nothing else can pull a multi-GB CUDA build).

Which index pip gets torch from:
  1. MINDIE_HELP_TORCH_INDEX_URL, when set: that URL; set but empty: pip's configured index (pip.conf,
     PIP_INDEX_URL, a local mirror...), with no probe at all.
  2. Otherwise, on Linux: the PyTorch CPU index (https://download.pytorch.org/whl/cpu) when it answers within a
     few seconds, because on Linux the default PyPI wheel is the CUDA build; when it does not answer (no
     internet, only a local mirror): pip's configured index.
  3. Otherwise (macOS, Windows): pip's configured index, whose wheels are CPU builds there already.

Nothing is probed or installed when the wanted torch is already there as a CPU build. A CUDA build of the same
version found there (an older bootstrap, or a manual `pip install torch`) is replaced, together with the
nvidia-*/triton packages it had pulled in.

  python scripts/torch_setup.py             install (or do nothing when already installed)
  python scripts/torch_setup.py --dry-run   print the decision and the pip command, change nothing

Standard library only: it runs before anything else is installed.
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import os
import platform
import re
import subprocess
import sys
import urllib.error
import urllib.request

TORCH_VERSION = "2.13.0"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
OVERRIDE_VARIABLE = "MINDIE_HELP_TORCH_INDEX_URL"
PROBE_TIMEOUT = 5.0  # seconds; a missing DNS answer fails at once, a black-holed network waits this long


def installed_torch() -> tuple[str | None, list[str]]:
    """(version, the CUDA packages it requires) of the torch in this environment; (None, []) when absent."""
    try:
        version = metadata.version("torch")
        requires = metadata.requires("torch") or []
    except metadata.PackageNotFoundError:
        return None, []
    cuda = []
    for requirement in requires:
        name = re.split(r"[\s;<>=!~\[(]", requirement.strip(), maxsplit=1)[0]
        if name.lower().startswith("nvidia-") or name.lower() == "triton":
            cuda.append(name)
    return version, sorted(set(cuda))


def is_cpu_build(version: str, cuda_requires: list[str]) -> bool:
    """`2.13.0+cpu` (CPU index) or a wheel that pulls no CUDA libraries (PyPI's CPU wheels outside Linux,
    the CPU index's aarch64 wheels); `2.13.0+cu126` or a plain `2.13.0` requiring nvidia-* is a CUDA build."""
    local = version.partition("+")[2]
    if local.startswith(("cu", "rocm", "xpu")):
        return False
    return not cuda_requires


def public_version(version: str) -> str:
    return version.partition("+")[0]


def reachable(index_url: str, timeout: float = PROBE_TIMEOUT) -> tuple[bool, str]:
    """Whether the index serves torch's project page (PEP 503: <index>/torch/), and why not."""
    url = index_url.rstrip("/") + "/torch/"
    request = urllib.request.Request(url, headers={"User-Agent": "mindie-help-bootstrap"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            if 200 <= response.status < 300:
                return True, f"HTTP {response.status}"
            return False, f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return False, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return False, f"{type(exc).__name__}: {reason}"


def choose_index(environ: dict[str, str], system: str, cpu_index: str = CPU_INDEX,
                 timeout: float = PROBE_TIMEOUT) -> tuple[str | None, str]:
    """(index URL for pip, or None for pip's configured index; the reason, one line)."""
    if OVERRIDE_VARIABLE in environ:
        value = environ[OVERRIDE_VARIABLE].strip()
        if value:
            return value, f"{OVERRIDE_VARIABLE} is set"
        return None, f"{OVERRIDE_VARIABLE} is empty: pip's configured index"
    if system != "Linux":
        return None, f"{system}: pip's configured index already has CPU builds"
    ok, why = reachable(cpu_index, timeout)
    if ok:
        return cpu_index, f"the PyTorch CPU index answers ({why})"
    return None, f"the PyTorch CPU index is not reachable ({why}): pip's configured index"


def pip_install(python: str, index: str | None, version: str = TORCH_VERSION) -> list[str]:
    command = [python, "-m", "pip", "install", "--quiet", f"torch=={version}"]
    if index:
        command[4:4] = ["--index-url", index]
    return command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Install the CPU build of torch (see the module docstring).")
    parser.add_argument("--dry-run", action="store_true", help="print the decision and the pip command; install nothing")
    parser.add_argument("--version", default=TORCH_VERSION, help=f"torch version (default {TORCH_VERSION})")
    parser.add_argument("--cpu-index", default=CPU_INDEX, help="the CPU index probed on Linux (tests point it elsewhere)")
    parser.add_argument("--timeout", type=float, default=PROBE_TIMEOUT, help="seconds to wait for the CPU index")
    parser.add_argument("--system", default=platform.system(), help=argparse.SUPPRESS)  # tests: pretend another OS
    args = parser.parse_args(argv)

    def say(message: str) -> None:
        print(f"[setup] {message}", file=sys.stderr)

    version, cuda = installed_torch()
    if version is not None and public_version(version) == args.version and is_cpu_build(version, cuda):
        say(f"torch {version} (CPU build) is already installed")
        if args.dry_run:
            print("nothing to do")
        return 0

    index, reason = choose_index(dict(os.environ), args.system, args.cpu_index, args.timeout)
    say(f"torch {args.version} from {index or 'the configured index'}: {reason}")
    commands = []
    if version is not None and not is_cpu_build(version, cuda):
        say(f"replacing the CUDA build torch {version} and the {len(cuda)} CUDA package(s) it pulled in")
        commands.append([sys.executable, "-m", "pip", "uninstall", "--yes", "--quiet", "torch", *cuda])
    commands.append(pip_install(sys.executable, index, args.version))
    for command in commands:
        if args.dry_run:
            print(" ".join(command))
            continue
        result = subprocess.run(command)
        if result.returncode != 0:
            return result.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
