from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
FACTS = ROOT / "tests" / "data" / "faq_commands"


@pytest.fixture
def corpus_copy(tmp_path: Path) -> Path:
    """A private copy of the real corpus that a test may break."""
    dest = tmp_path / "corpus"
    shutil.copytree(CORPUS, dest)
    return dest


@pytest.fixture(scope="session")
def engine_settings(tmp_path_factory):
    """The project's own embeddings/ folder, as a user has it: built once, reused while the corpus and
    model stay the same (the engine rebuilds it itself when they do). Tests that damage an index use
    folders of their own."""
    from bot.settings import Settings

    scratch = tmp_path_factory.mktemp("state")
    return Settings(corpus_dir=CORPUS, index_dir=ROOT / "embeddings", feedback_db=scratch / "fb.sqlite3")


@pytest.fixture(scope="session")
def engine(engine_settings):
    from bot.engine.engine import Engine

    return Engine.from_settings(engine_settings)


# --- databases: SQLite and a real PostgreSQL (one server per session, one fresh database per test) ---------


@pytest.fixture(scope="session")
def postgres_server():
    from pg_server import PostgresServer, find_bindir

    bindir = find_bindir()
    if bindir is None:
        message = "PostgreSQL server binaries not found (scripts/test.sh installs the postgresql package)"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI must test the PostgreSQL back-end, never skip it
        pytest.skip(message)
    server = PostgresServer(bindir).start()
    yield server
    server.stop()


@pytest.fixture
def pg_url(postgres_server) -> str:
    return postgres_server.create_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path: Path) -> str:
    """The same test on both back-ends."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.sqlite3'}"
    return request.getfixturevalue("pg_url")
