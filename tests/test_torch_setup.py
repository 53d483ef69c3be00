"""scripts/torch_setup.py (called by scripts/bootstrap.sh): which index the CPU torch comes from, run for real as a
subprocess in --dry-run mode against local HTTP servers (an index that answers, one that refuses, a closed
port), so no test touches the internet."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "torch_setup.py"
ABSENT = "9.9.9"  # a torch version that is not installed, so the selection runs


def load_module():
    spec = importlib.util.spec_from_file_location("torch_setup", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


class Index:
    """A PEP 503 index on 127.0.0.1 that serves /whl/cpu/torch/ with `status` and records the paths asked."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                outer.paths.append(self.path)
                body = b'<html><body><a href="torch-9.9.9+cpu-cp311-cp311-linux_x86_64.whl">torch</a></body></html>'
                self.send_response(outer.status if self.path == "/whl/cpu/torch/" else 404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/whl/cpu"


@pytest.fixture
def index(request) -> Iterator[Index]:
    served = Index(getattr(request, "param", 200))
    served.thread.start()
    yield served
    served.server.shutdown()
    served.server.server_close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(*args: str, override: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MINDIE_HELP_TORCH_INDEX_URL"}
    if override is not None:
        env["MINDIE_HELP_TORCH_INDEX_URL"] = override
    return subprocess.run([sys.executable, str(SCRIPT), "--dry-run", *args], env=env, capture_output=True, text=True, timeout=60)


def pip_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines and " -m pip install " in lines[-1], result.stdout
    return lines[-1]


def test_reachable_cpu_index_is_used_on_linux(index):
    result = run("--version", ABSENT, "--cpu-index", index.url, "--system", "Linux")
    assert pip_line(result).endswith(f"pip install --index-url {index.url} --quiet torch=={ABSENT}")
    assert index.paths == ["/whl/cpu/torch/"]
    assert "the PyTorch CPU index answers (HTTP 200)" in result.stderr


def test_unreachable_cpu_index_falls_back_to_the_configured_index():
    url = f"http://127.0.0.1:{closed_port()}/whl/cpu"
    result = run("--version", ABSENT, "--cpu-index", url, "--system", "Linux")
    line = pip_line(result)
    assert "--index-url" not in line and line.endswith(f"pip install --quiet torch=={ABSENT}")
    assert "not reachable" in result.stderr and "configured index" in result.stderr


@pytest.mark.parametrize("index", [403], indirect=True)
def test_an_index_that_refuses_counts_as_unreachable(index):
    result = run("--version", ABSENT, "--cpu-index", index.url, "--system", "Linux")
    assert "--index-url" not in pip_line(result)
    assert "HTTP 403" in result.stderr


def test_override_is_used_without_probing(index):
    result = run("--version", ABSENT, "--cpu-index", index.url, "--system", "Linux", override="https://mirror.example/torch-cpu")
    assert "--index-url https://mirror.example/torch-cpu " in pip_line(result)
    assert index.paths == []


def test_empty_override_means_the_configured_index_without_probing(index):
    result = run("--version", ABSENT, "--cpu-index", index.url, "--system", "Linux", override="")
    assert "--index-url" not in pip_line(result)
    assert index.paths == [] and "is empty" in result.stderr


def test_other_systems_use_the_configured_index(index):
    result = run("--version", ABSENT, "--cpu-index", index.url, "--system", "Darwin")
    assert "--index-url" not in pip_line(result)
    assert index.paths == []


def test_installed_cpu_torch_is_a_no_op_without_network(index):
    torch_setup = load_module()
    version, cuda = torch_setup.installed_torch()
    if version is None or not torch_setup.is_cpu_build(version, cuda):
        pytest.skip("this environment has no CPU torch")
    result = run("--version", torch_setup.public_version(version), "--cpu-index", index.url, "--system", "Linux")
    assert result.returncode == 0 and result.stdout.strip() == "nothing to do"
    assert "already installed" in result.stderr and index.paths == []


def test_cuda_builds_are_recognised():
    torch_setup = load_module()
    assert torch_setup.is_cpu_build("2.13.0+cpu", [])
    assert torch_setup.is_cpu_build("2.13.0", [])  # macOS / aarch64 CPU wheels carry no local label
    assert not torch_setup.is_cpu_build("2.13.0", ["nvidia-cublas-cu12"])  # PyPI's Linux x86_64 wheel
    assert not torch_setup.is_cpu_build("2.13.0+cu126", [])
    assert torch_setup.pip_install("py", None) == ["py", "-m", "pip", "install", "--quiet", "torch==2.13.0"]


def test_bootstrap_uses_the_helper_and_reinstalls_when_it_changes():
    text = (ROOT / "scripts" / "bootstrap.sh").read_text()
    assert "scripts/torch_setup.py" in text.split("want=", 1)[1].splitlines()[0]  # part of the install stamp
    assert ".venv/bin/python scripts/torch_setup.py" in text
    assert 'pip install --quiet "torch' not in text
