"""The lexical index's directory: the Whoosh index in it, the analyzer version it records,
and opening it — or re-creating it empty when its terms were made by another analyzer
version (:class:`retrieval.lexical.LexicalIndex` opens it this way)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from whoosh import index as whoosh_index

from cairn.retrieval.analysis import ANALYZER_VERSION
from cairn.retrieval.lexical_schema import passage_schema

INDEX_NAME = "passages"

ANALYZER_FILE = "analyzer.json"
"""File in the index directory recording the analyzer version its terms were made with
(:data:`retrieval.analysis.ANALYZER_VERSION`); an index without it was made by version 1."""


def analyzer_version(path: Path) -> int:
    """The analyzer version recorded in the index directory ``path`` (1 when the file is absent)."""
    try:
        return int(json.loads((path / ANALYZER_FILE).read_text(encoding="utf-8"))["analyzerVersion"])
    except FileNotFoundError:
        return 1
    except (OSError, ValueError, KeyError, TypeError):
        return 0  # unreadable: treated as another version (re-created)


def open_passage_index(path: Path) -> tuple[Any, str | None]:
    """Open the passage index in the existing directory ``path``, creating it if missing.

    An index whose recorded analyzer version is not :data:`retrieval.analysis.ANALYZER_VERSION`
    is re-created empty (with :func:`retrieval.lexical_schema.passage_schema`), and the
    current version is recorded in :data:`ANALYZER_FILE`.

    Args:
        path: Index directory (must exist).

    Returns:
        ``(Whoosh index, migrated)``: ``migrated`` is None, or the message saying the index
        held passages analysed by another analyzer version and was re-created empty (the
        caller re-indexes every passage and logs it once).
    """
    version = analyzer_version(path)
    exists = whoosh_index.exists_in(str(path), indexname=INDEX_NAME)
    if exists and version == ANALYZER_VERSION:
        return whoosh_index.open_dir(str(path), indexname=INDEX_NAME), None
    migrated = None
    if exists:
        old = whoosh_index.open_dir(str(path), indexname=INDEX_NAME)
        held = old.doc_count()
        old.close()
        if held:
            migrated = (
                f"BM25 index at {path} holds {held} passages analysed by analyzer version {version}, "
                f"this version is {ANALYZER_VERSION}: it was re-created empty and every passage is "
                "re-indexed now (SQL is unchanged; this runs once)"
            )
    index = whoosh_index.create_in(str(path), passage_schema(), indexname=INDEX_NAME)
    (path / ANALYZER_FILE).write_text(json.dumps({"analyzerVersion": ANALYZER_VERSION}), encoding="utf-8")
    return index, migrated
