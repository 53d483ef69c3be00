"""A throwaway PostgreSQL server for the tests and bench/replicas.py: initdb in a temporary folder, a free port
on 127.0.0.1, stopped and deleted afterwards. Needs the server binaries (Debian: postgresql; scripts/test.sh
installs them when missing). As root the server runs as the `postgres` user, since PostgreSQL refuses root."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path


def find_bindir() -> Path | None:
    """The folder holding initdb/pg_ctl/postgres: $MINDIE_HELP_PG_BINDIR, Debian's newest, or the PATH."""
    candidates = [os.environ.get("MINDIE_HELP_PG_BINDIR", "")]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0, reverse=True)
    found = shutil.which("pg_ctl")
    if found:
        candidates.append(str(Path(found).parent))
    for folder in candidates:
        if folder and all((Path(folder) / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres")):
            return Path(folder)
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="mindie-pg-"))
        self.data = self.root / "data"
        self.port = 0
        self._as_postgres = os.geteuid() == 0

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self.bindir / args[0]), *args[1:]]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, check=check, capture_output=True, text=True, timeout=120)

    def start(self) -> "PostgresServer":
        if self._as_postgres:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
        os.chmod(self.root, 0o700)
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync")
        self.port = free_port()
        # fsync off: the tests kill replicas, never the database, and it keeps the suite fast.
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off "
            "-c max_connections=300 -c shared_buffers=32MB"
        )
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "server.log"), "-w", "-t", "60", "start")
        return self

    def stop(self, remove: bool = True) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)

    def restart(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off "
            "-c max_connections=300 -c shared_buffers=32MB"
        )
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "server.log"), "-w", "-t", "60", "start")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; returns its URL."""
        import psycopg

        name = name or "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)
