"""The lexical index's directory: the Whoosh index in it, the analyzer version it records,
and opening it — or re-creating it empty when its terms were made by another analyzer
version or its schema by an older layout (:class:`retrieval.lexical.whoosh_index.WhooshIndex` opens it
this way).

Whoosh pickles the schema (with the analyzer's classes, by module path) into the table of
contents. An index made before the ``cairn.`` package move names ``retrieval.analysis``, a
module that no longer exists, so unpickling it raises ``ModuleNotFoundError`` (a class
moved or renamed: ``AttributeError``): such an index is of an older layout and is re-created
empty like one of another analyzer version, the caller re-indexing every passage from SQL.

Any other failure to read the index — a truncated, deleted or garbage segment file or table
of contents — raises :class:`retrieval.checks.IndexUnreadable` (the caller names the repair
command), or, with ``rebuild_unreadable`` (``cairn reindex``), re-creates it empty too.
Opening checks every segment (:func:`check_segments`): its files' sizes and SHA-256 against
:data:`SUMS_FILE` (written after each commit: segment files never change once written), then
what a search reads first. Whoosh has no checksums of its own, and a structural read alone
missed 64 random bytes written into the middle or end of a segment (a search still answered);
hashing costs 0.3–0.5 s per 100 MB of index at open (SHA-256 of a 100 MB file: 0.50 s on this
2-core machine under load), and only the new segments' bytes per commit.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Any

from whoosh import index as whoosh_index

from cairn.retrieval.analysis import ANALYZER_VERSION
from cairn.retrieval.checks import IndexUnreadable, describe
from cairn.retrieval.lexical.schema import passage_schema

INDEX_NAME = "passages"

ANALYZER_FILE = "analyzer.json"
"""File in the index directory recording the analyzer version its terms were made with
(:data:`retrieval.analysis.ANALYZER_VERSION`); an index without it was made by version 1."""

WHAT = "BM25 index"
"""The index's name in messages (:class:`retrieval.checks.IndexUnreadable`)."""

OLDER_LAYOUT = (ImportError, AttributeError)
"""What unpickling a schema raises when it names a module or class this version lacks."""

SUMS_FILE = "segments.json"
"""File in the index directory: ``{"files": {name: [bytes, sha256]}}`` of the segments' files
(:func:`record_sums`); a segment file not listed (an index of an older Cairn, or a crash
between a commit and this file) is checked by its structure only."""


def analyzer_version(path: Path) -> int:
    """The analyzer version recorded in the index directory ``path`` (1 when the file is absent)."""
    try:
        return int(json.loads((path / ANALYZER_FILE).read_text(encoding="utf-8"))["analyzerVersion"])
    except FileNotFoundError:
        return 1
    except (OSError, ValueError, KeyError, TypeError):
        return 0  # unreadable: treated as another version (re-created)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _read_sums(path: Path) -> dict[str, list]:
    try:
        files = json.loads((path / SUMS_FILE).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return files if isinstance(files, dict) else {}


def _segment_files(index: Any) -> list[str]:
    """Names of the files of the index's current segments."""
    return sorted({name for segment in index._segments() for name in segment.list_files(index.storage)})


def record_sums(path: Path, index: Any) -> None:
    """Write :data:`SUMS_FILE` for the index's current segments (after a commit).

    Only files not yet listed with their size are hashed (segment files never change once
    written); the file is replaced atomically.
    """
    old = _read_sums(path)
    files = {}
    for name in _segment_files(index):
        size = (path / name).stat().st_size
        known = old.get(name)
        files[name] = known if isinstance(known, list) and known[:1] == [size] else [size, _sha256(path / name)]
    partial = path / f".{SUMS_FILE}.partial"
    partial.write_text(json.dumps({"files": files}), encoding="utf-8")
    os.replace(partial, path / SUMS_FILE)


def check_segments(index: Any, path: Path) -> int:
    """Check every segment of the index in ``path``; return the undeleted passage count.

    Per segment: each file's size and SHA-256 against :data:`SUMS_FILE` (when listed), then
    what a search reads first: the compound file's directory (opening the reader), the stored
    fields of its last document, the field length of its ``body`` and the term-dictionary
    entry of its ``passage_id`` (measured on truncated, emptied, deleted and random-byte
    segment files, and truncated, emptied and garbage tables of contents).

    Raises:
        ValueError: a segment file's size or SHA-256 differs from the recorded one.
        Exception: whatever Whoosh raises on a damaged file (``EOFError``, ``struct.error``,
            ``FileNotFoundError``, ``UnpicklingError``, ...).
    """
    sums = _read_sums(path)
    for name in _segment_files(index):
        known = sums.get(name)
        if not isinstance(known, list) or len(known) != 2:
            continue
        size = (path / name).stat().st_size
        if size != known[0] or _sha256(path / name) != known[1]:
            raise ValueError(f"segment file {name} differs from its recorded size and SHA-256 ({size} bytes now)")
    with index.reader() as reader:
        for leaf, _offset in reader.leaf_readers():
            total = leaf.doc_count_all()
            if total:
                last = leaf.stored_fields(total - 1)
                leaf.doc_field_length(total - 1, "body")
                leaf.term_info("passage_id", last["passage_id"])
        return reader.doc_count()


class OlderLayout(Exception):
    """The index's schema names a module or class this version lacks (module doc); the
    message is the unpickling error, ``"ModuleNotFoundError: No module named 'retrieval'"``."""


def _failure(exc: BaseException, path: Path) -> Exception:
    """The exception to raise for ``exc`` raised by Whoosh while reading ``path``, after
    dropping its traceback: Whoosh leaves the file it was reading open in its frames when it
    fails, and the traceback is what keeps them alive (closed here, without the
    ResourceWarning it would give later wherever the exception was released)."""
    detail = describe(exc)
    older = isinstance(exc, OLDER_LAYOUT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        exc.__traceback__ = None
        exc.__context__ = exc.__cause__ = None
        del exc
        gc.collect()
    return OlderLayout(detail) if older else IndexUnreadable(WHAT, path, detail)


def _open_existing(path: Path) -> tuple[Any, int] | None:
    """``(index, passages)`` of the index in ``path``, None when it holds none.

    Raises:
        OlderLayout: the schema names a module or class that no longer exists.
        IndexUnreadable: any other failure to read it.
    """
    failure: BaseException | None = None
    try:
        index = whoosh_index.open_dir(str(path), indexname=INDEX_NAME)
    except whoosh_index.EmptyIndexError:
        return None
    except Exception as exc:  # noqa: BLE001 - any damage is the same refusal
        failure = exc
    if failure is not None:
        raise _failure(failure, path) from None
    try:
        return index, check_segments(index, path)
    except Exception as exc:  # noqa: BLE001
        failure = exc
    index.close()
    raise _failure(failure, path) from None


def _remove_index_files(path: Path) -> None:
    """Delete the Whoosh files of :data:`INDEX_NAME` in ``path`` (table of contents, segments,
    locks); other files in the folder are kept."""
    for item in path.iterdir():
        if item.is_file() and (item.name.startswith(f"_{INDEX_NAME}_") or item.name.startswith(f"{INDEX_NAME}_")):
            item.unlink()


def open_passage_index(path: Path, *, rebuild_unreadable: bool = False) -> tuple[Any, str | None]:
    """Open the passage index in the existing directory ``path``, creating it if missing.

    An index whose recorded analyzer version is not :data:`retrieval.analysis.ANALYZER_VERSION`,
    or whose schema names a module or class that no longer exists (module doc), is re-created
    empty (with :func:`retrieval.lexical.schema.passage_schema`), and the current version is
    recorded in :data:`ANALYZER_FILE`.

    Args:
        path: Index directory (must exist).
        rebuild_unreadable: Re-create an unreadable index empty too, instead of raising.

    Returns:
        ``(Whoosh index, migrated)``: ``migrated`` is None, or the message saying the index
        was re-created empty and why (the caller re-indexes every passage and logs it once).

    Raises:
        IndexUnreadable: the index cannot be read and ``rebuild_unreadable`` is False.
    """
    version = analyzer_version(path)
    migrated = None
    try:
        found = _open_existing(path)
    except OlderLayout as exc:
        found = None
        migrated = (
            f"{WHAT} at {path} was made by an older Cairn (its schema names what this version lacks: "
            f"{exc}): it was re-created empty and every passage is re-indexed now "
            "(SQL is unchanged; this runs once)"
        )
    except IndexUnreadable as exc:
        if not rebuild_unreadable:
            raise
        found = None
        migrated = f"{exc}: it was re-created empty and every passage is re-indexed now (SQL is unchanged)"
    if found is not None:
        index, held = found
        if version == ANALYZER_VERSION:
            return index, None
        index.close()
        if held:
            migrated = (
                f"{WHAT} at {path} holds {held} passages analysed by analyzer version {version}, "
                f"this version is {ANALYZER_VERSION}: it was re-created empty and every passage is "
                "re-indexed now (SQL is unchanged; this runs once)"
            )
    _remove_index_files(path)
    (path / SUMS_FILE).unlink(missing_ok=True)
    index = whoosh_index.create_in(str(path), passage_schema(), indexname=INDEX_NAME)
    (path / ANALYZER_FILE).write_text(json.dumps({"analyzerVersion": ANALYZER_VERSION}), encoding="utf-8")
    return index, migrated
