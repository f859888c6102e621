"""Settings, validated once at start-up (pydantic-settings, env prefix ``CAIRN_``).

Nothing here runs at import time: call :func:`load_settings` (or build
:class:`Settings` directly in tests) and pass the object down explicitly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every knob of a Cairn process.

    Attributes:
        env: ``dev`` allows the embedded defaults and a wildcard CORS list; ``prod`` refuses
            unsafe defaults (no explicit database URL, ``*`` in CORS origins).
        data_dir: Root of the embedded store: ``cairn.db`` (SQLite), ``whoosh/``, ``qdrant/``.
        database_url: SQLAlchemy async URL; ``None`` means ``sqlite+aiosqlite:///<data_dir>/cairn.db``.
        qdrant_url: A Qdrant server (or cluster) URL; ``None`` means the embedded engine under
            ``data_dir/qdrant``.
        vector_backend: Embedded engine: ``edge`` (qdrant-edge-py, in-process Rust, chosen by
            measurement, see bench/vector_backends.py) or ``local`` (qdrant-client local mode).
        embedder: ``local`` (all-MiniLM-L6-v2 from the offline package) or ``openai``
            (an OpenAI-compatible ``/embeddings`` endpoint at ``embedding_url``).
        chunk_max_tokens: Passage size limit in cl100k tokens (MiniLM reads 256 wordpieces).
        cors_origins: Origins whose browsers may call with *member* tokens.
        cursor_secret: HMAC key of ontology cursors; unset → random per process (cursors then
            do not survive a restart and do not work across workers).
        ontology_source_dirs: Directories under which ``loadKnowledgeNetwork`` (GraphQL) may
            read CSV files; empty → GraphQL loads are refused (use ``cairn ontology load``).
        reranker_path: Local cross-encoder folder for ``semanticRecall(rerank: true)``; unset →
            rerank keeps the fused order and says so.
        judge: Decision judge: ``local`` (Gemma 3 270M in-process, no network) or ``openai``
            (an OpenAI-compatible ``/v1/completions`` endpoint at ``judge_url`` that supports
            ``echo`` + ``logprobs``, model ``judge_model``, key ``judge_api_key``).
        judge_context_window: Model tokens the local judge reads (prompt + option).
        judge_threads: llama.cpp threads of the local judge.
        judge_timeout_seconds: Deadline of one decision's judge work (504 ``decision_timeout``).
        decision_context_tokens: Decision context budget in cl100k tokens (state / session).
    """

    model_config = SettingsConfigDict(env_prefix="CAIRN_", extra="ignore")

    env: Literal["dev", "prod"] = "dev"
    data_dir: Path = Path("./cairn-data")
    database_url: str | None = None
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    qdrant_collection: str = "cairn_passages"
    vector_backend: Literal["edge", "local"] = "edge"
    embedder: Literal["local", "openai", "none"] = "local"
    embedding_url: str | None = None
    embedding_model: str = "all-MiniLM-L6-v2"
    embedding_api_key: str | None = None
    chunk_max_tokens: int = Field(default=200, ge=32, le=2000)
    cors_origins: list[str] = Field(default_factory=list)
    log_level: str = "INFO"
    cursor_secret: str | None = None
    ontology_source_dirs: list[Path] = Field(default_factory=list)
    reranker_path: Path | None = None
    judge: Literal["local", "openai"] = "local"
    judge_url: str | None = None
    judge_model: str = "gemma-3-270m"
    judge_api_key: str | None = None
    judge_model_path: Path | None = None
    judge_context_window: int = Field(default=2048, ge=256, le=32768)
    judge_threads: int = Field(default=1, ge=1, le=64)
    judge_timeout_seconds: float = Field(default=60.0, gt=0, le=600)
    decision_context_tokens: int = Field(default=1500, ge=64, le=100_000)

    @model_validator(mode="after")
    def _refuse_unsafe_prod(self) -> Settings:
        if self.env == "prod":
            if not self.database_url:
                raise ValueError("CAIRN_DATABASE_URL must be set when CAIRN_ENV=prod")
            if "*" in self.cors_origins:
                raise ValueError("CAIRN_CORS_ORIGINS may not contain '*' when CAIRN_ENV=prod")
        if self.embedder == "openai" and not self.embedding_url:
            raise ValueError("CAIRN_EMBEDDING_URL is required when CAIRN_EMBEDDER=openai")
        if self.judge == "openai" and not self.judge_url:
            raise ValueError("CAIRN_JUDGE_URL is required when CAIRN_JUDGE=openai")
        return self

    @property
    def resolved_database_url(self) -> str:
        """The SQLAlchemy async URL actually used (embedded SQLite file by default)."""
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'cairn.db').resolve()}"

    @property
    def whoosh_dir(self) -> Path:
        """Directory of the Whoosh (BM25) index."""
        return self.data_dir / "whoosh"

    @property
    def qdrant_dir(self) -> Path:
        """Directory of the embedded Qdrant storage."""
        return self.data_dir / "qdrant"


def load_settings(**overrides: object) -> Settings:
    """Build :class:`Settings` from the environment, with keyword overrides on top.

    Raises:
        pydantic.ValidationError: a value is out of range or unsafe for ``prod``.
    """
    return Settings(**overrides)  # type: ignore[arg-type]
