"""Settings from the environment: list settings both ways, one-line errors, one vector vocabulary."""

from __future__ import annotations

import fcntl
import os
import socket
from pathlib import Path
from typing import get_origin

import numpy as np
import pytest
from pydantic import ValidationError

from cairn.app.core.config import Settings, SettingsInvalid, load_settings, user_cache_dir
from cairn.app.core.datadir import DataDirInUse, DataDirLock
from cairn.app.corpus import open_indexes
from cairn.retrieval.vectors import BACKENDS, ClientVectorIndex, EdgeVectorIndex, VectorPoint, VectorStoreUnavailable

LIST_FIELDS = sorted(n for n, f in Settings.model_fields.items() if get_origin(f.annotation) is list)


@pytest.fixture
def clean_env(monkeypatch):
    for name in Settings.model_fields:
        monkeypatch.delenv(f"CAIRN_{name.upper()}", raising=False)
    return monkeypatch


def test_every_list_setting_reads_a_comma_list_and_a_json_list(clean_env):
    assert {"cors_origins", "ontology_source_dirs"} <= set(LIST_FIELDS)
    for name in LIST_FIELDS:
        var = f"CAIRN_{name.upper()}"
        expected = getattr(Settings(**{name: ["http://localhost:3000", "https://b.example"]}), name)
        clean_env.setenv(var, "http://localhost:3000, https://b.example,")
        assert getattr(load_settings(), name) == expected, var
        clean_env.setenv(var, '["http://localhost:3000", "https://b.example"]')
        assert getattr(load_settings(), name) == expected, var
        clean_env.setenv(var, "http://localhost:3000")
        assert len(getattr(load_settings(), name)) == 1, var
        clean_env.setenv(var, "")
        assert getattr(load_settings(), name) == [], var
        clean_env.delenv(var)
    clean_env.setenv("CAIRN_ONTOLOGY_SOURCE_DIRS", "/srv/a,/srv/b")
    assert load_settings().ontology_source_dirs == [Path("/srv/a"), Path("/srv/b")]


@pytest.mark.parametrize(
    "var, value, says",
    [
        ("CAIRN_CORS_ORIGINS", '["http://a", ', "CAIRN_CORS_ORIGINS='[\"http://a\", ': not valid JSON"),
        ("CAIRN_ONTOLOGY_SOURCE_DIRS", "[1", "CAIRN_ONTOLOGY_SOURCE_DIRS='[1': not valid JSON"),
        ("CAIRN_CORS_ORIGINS", "[1]", "CAIRN_CORS_ORIGINS[0]=1: Input should be a valid string"),
        (
            "CAIRN_CHUNK_MAX_TOKENS",
            "5",
            "CAIRN_CHUNK_MAX_TOKENS='5': Input should be greater than or equal to 32; "
            "expected an integer >= 32 and <= 2000",
        ),
        ("CAIRN_VECTOR_BACKEND", "faiss", "expected one of auto | edge | local | server"),
        ("CAIRN_JUDGE_TIMEOUT_SECONDS", "soon", "CAIRN_JUDGE_TIMEOUT_SECONDS='soon'"),
        ("CAIRN_VECTOR_BACKEND", "server", "CAIRN_QDRANT_URL is required when CAIRN_VECTOR_BACKEND=server"),
        ("CAIRN_LOG_LEVEL", "LOUD", "expected one of DEBUG | INFO | WARNING | ERROR | CRITICAL"),
    ],
)
def test_a_bad_setting_is_one_line_naming_the_variable_and_the_format(clean_env, var, value, says):
    clean_env.setenv(var, value)
    with pytest.raises(SettingsInvalid) as exc:
        load_settings()
    message = exc.value.message
    assert says in message and "\n" not in message
    if get_origin(Settings.model_fields[var[6:].lower()].annotation) is list:
        assert 'expected a comma-separated list (a,b) or a JSON list (["a","b"])' in message


def test_the_log_level_is_read_in_any_case(clean_env):
    clean_env.setenv("CAIRN_LOG_LEVEL", " warning ")
    assert load_settings().log_level == "WARNING"


def test_secrets_are_not_echoed_in_setting_errors(clean_env):
    clean_env.setenv("CAIRN_ENV", "prod")
    clean_env.setenv("CAIRN_CURSOR_SECRET", "hunter2")
    with pytest.raises(SettingsInvalid) as exc:
        load_settings()
    assert exc.value.message == "CAIRN_DATABASE_URL must be set when CAIRN_ENV=prod"


def test_the_model_cache_follows_xdg_cache_home_unless_set(clean_env, tmp_path):
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_dir() == tmp_path / "xdg" / "cairn"
    assert load_settings().resolved_model_cache_dir == tmp_path / "xdg" / "cairn"
    clean_env.setenv("XDG_CACHE_HOME", "relative/cache")  # the XDG spec: a relative path is ignored
    clean_env.setenv("HOME", str(tmp_path / "home"))
    assert user_cache_dir() == tmp_path / "home" / ".cache" / "cairn"
    clean_env.delenv("XDG_CACHE_HOME")
    assert user_cache_dir() == tmp_path / "home" / ".cache" / "cairn"
    clean_env.setenv("CAIRN_MODEL_CACHE_DIR", str(tmp_path / "mine"))
    assert load_settings().resolved_model_cache_dir == tmp_path / "mine"


def test_vector_backend_one_vocabulary_with_auto_default(clean_env):
    assert Settings.model_fields["vector_backend"].default == "auto"
    assert set(Settings.model_fields["vector_backend"].annotation.__args__) == set(BACKENDS)
    assert Settings().resolved_vector_backend == "edge"
    assert Settings(qdrant_url="http://q:6333").resolved_vector_backend == "server"
    assert Settings(vector_backend="local").resolved_vector_backend == "local"
    assert Settings(vector_backend="server", qdrant_url="http://q:6333").resolved_vector_backend == "server"
    clean_env.setenv("CAIRN_VECTOR_BACKEND", "local")  # refused by open_vector_index before
    assert load_settings().resolved_vector_backend == "local"
    clean_env.setenv("CAIRN_QDRANT_URL", "http://q:6333")
    with pytest.raises(SettingsInvalid, match="CAIRN_VECTOR_BACKEND=local is the embedded engine but CAIRN_QDRANT_URL"):
        load_settings()


def assert_unlocked(data_dir: Path) -> None:
    """flock conflicts between open file descriptions even in one process: a fresh one must get it."""
    fd = os.open(data_dir / "cairn.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "backend, kind", [("auto", EdgeVectorIndex), ("edge", EdgeVectorIndex), ("local", ClientVectorIndex)]
)
def test_open_indexes_for_every_embedded_setting(tmp_path, backend, kind):
    settings = Settings(data_dir=tmp_path / "d", vector_backend=backend)
    indexes = open_indexes(settings)
    try:
        assert isinstance(indexes.vectors, kind)
        v = np.ones(indexes.embedder.dim, dtype=np.float32)
        indexes.vectors.upsert([VectorPoint("p1", v, "w", "c", "d")])
        assert [pid for pid, _ in indexes.vectors.search(v, workspace_id="w")] == ["p1"]
    finally:
        indexes.close()
    assert_unlocked(settings.data_dir)  # closing released the data dir


@pytest.mark.parametrize("backend", ["auto", "server"])
def test_a_qdrant_url_resolves_to_the_server_and_an_unreachable_one_is_one_line(tmp_path, backend):
    url = f"http://127.0.0.1:{_closed_port()}"
    settings = Settings(data_dir=tmp_path / "d", qdrant_url=url, vector_backend=backend)
    assert settings.resolved_vector_backend == "server"
    with pytest.raises(VectorStoreUnavailable) as exc:
        open_indexes(settings)
    assert str(exc.value).startswith(f"cannot use the Qdrant server at {url}: ") and "\n" not in str(exc.value)
    assert not (settings.data_dir / "cairn.lock").exists()  # cluster mode: no local index, no data dir lock


def test_the_data_dir_lock_is_reentrant_in_a_process_and_exclusive_across_processes(tmp_path):
    import subprocess
    import sys

    first = DataDirLock(tmp_path)
    second = DataDirLock(tmp_path)  # same process (serve holds it while the app opens the indexes)
    probe = (
        "import sys; from cairn.app.core.datadir import DataDirLock, DataDirInUse\n"
        "try:\n    DataDirLock(sys.argv[1])\nexcept DataDirInUse as e:\n    print(e.pid, e.message)"
    )
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, cwd=root, timeout=60
    ).stdout.strip()
    assert out == (
        f"{os.getpid()} the data dir {tmp_path} is in use by process {os.getpid()} (cairn serve?); stop it first"
    )
    first.release()
    first.release()  # idempotent: does not drop the second holder's reference
    with pytest.raises(BlockingIOError):
        assert_unlocked(tmp_path)
    second.release()
    assert_unlocked(tmp_path)
    assert DataDirInUse(tmp_path, None).message.startswith(f"the data dir {tmp_path} is in use by another process")


def test_open_indexes_batches_queries_with_the_query_settings(tmp_path):
    from cairn.retrieval.embeddings.batching import BatchedEmbedder
    from cairn.retrieval.embeddings.minilm import LocalMiniLM

    settings = Settings(
        data_dir=tmp_path / "d", query_batch_window_ms=4, query_batch_max=3, query_cache_size=7, query_threads=2
    )
    indexes = open_indexes(settings)
    try:
        assert isinstance(indexes.embedder, BatchedEmbedder)
        assert isinstance(indexes.embedder.inner, LocalMiniLM) and indexes.embedder.inner.query_threads == 2
        b = indexes.embedder.batcher
        assert (b.window_s, b.max_batch, b.cache_size) == (0.004, 3, 7)
    finally:
        indexes.close()
    with pytest.raises(RuntimeError, match="closed"):
        b.submit("after close")
    with pytest.raises(ValidationError):
        Settings(query_batch_max=0)


def test_cluster_mode_keeps_no_local_search_state_so_workers_share_a_data_dir(clean_env, tmp_path):
    """The bug: every worker took the data dir lock even with CAIRN_QDRANT_URL, so
    `uvicorn cairn.app.main:app --workers 2` (PostgreSQL + a Qdrant server) stopped at start-up with
    DataDirInUse. Cluster mode now puts BM25 in Qdrant too and takes no lock."""
    clean_env.setenv("CAIRN_QDRANT_URL", "http://q:6333")
    settings = load_settings(data_dir=tmp_path)
    assert (settings.resolved_lexical_backend, settings.resolved_vector_backend) == ("qdrant", "server")
    assert settings.local_indexes is False
    clean_env.delenv("CAIRN_QDRANT_URL")
    assert Settings(data_dir=tmp_path).local_indexes is True  # embedded default: Whoosh + edge
    assert Settings(vector_backend="local", lexical_backend="qdrant").local_indexes is True  # local mode on disk
    assert Settings(qdrant_url="http://q:6333", lexical_backend="whoosh").local_indexes is True
    clean_env.setenv("CAIRN_LEXICAL_BACKEND", "qdrant")
    with pytest.raises(SettingsInvalid, match="CAIRN_LEXICAL_BACKEND=qdrant keeps BM25 in a qdrant-client collection"):
        load_settings()


def test_worker_slots_are_the_first_free_folder_under_workers(tmp_path):
    """``cairn serve --workers N``: each process locks the first free ``workers/<k>`` (k < limit)."""
    import subprocess
    import sys

    from cairn.app.core.datadir import claim_worker_dir

    slot, lock = claim_worker_dir(tmp_path)
    assert slot == 0 and lock.path == tmp_path / "workers" / "0"
    probe = (
        "import sys; from cairn.app.core.datadir import claim_worker_dir, DataDirInUse\n"
        "try:\n    print(claim_worker_dir(sys.argv[1], int(sys.argv[2]))[0])\n"
        "except DataDirInUse as e:\n    print(e.message)"
    )
    root = Path(__file__).resolve().parents[3]

    def other_process(count: int) -> str:
        return subprocess.run(
            [sys.executable, "-c", probe, str(tmp_path), str(count)],
            capture_output=True,
            text=True,
            cwd=root,
            timeout=60,
        ).stdout.strip()

    assert other_process(2) == "1"  # slot 0 is held here; slot 1 is free (the probe's exit freed it)
    assert other_process(1) == (
        f"the data dir {tmp_path / 'workers'} is in use by another process (cairn serve?); stop it first"
    )
    lock.release()
    assert other_process(1) == "0"
    with pytest.raises(ValueError, match="limit must be >= 1, got 0"):
        claim_worker_dir(tmp_path, 0)
