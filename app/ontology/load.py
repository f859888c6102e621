"""Loading a knowledge network: mapping + source rows → typed instances (+ vectors) in SQL.

Storage (why): instances are SQL rows holding their typed values as JSON
(:class:`~app.core.models.ObjectInstance`), so SQL stays the single source of truth on SQLite
and PostgreSQL alike; vectors of vector-indexed properties are stored beside them (float32,
base64) so the in-process vector index is rebuilt without re-encoding. Full-text (Whoosh)
and vector indexes are derived in memory per object type on first use
(:mod:`app.ontology.store`).

A load replaces the whole network in one transaction (types and instances of the old load
go, the new ones come, ``generation`` + 1), so a reader never sees half a load; concurrent
loads of one network take turns (:func:`app.core.db.serialize`), each adding 1 to the generation.
Each distinct string of a vector-indexed property is encoded once.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.db import Database, serialize
from cairn.app.core.errors import BadInput
from cairn.app.core.ids import utcnow
from cairn.app.core.models import KnowledgeNetwork, ObjectInstance, ObjectType
from cairn.app.core.text_rules import validate_path
from cairn.app.ontology.mapping import (
    MappingSpec,
    ObjectTypeSpec,
    SourceRows,
    csv_files_of,
    read_csv_rows,
    read_sql_rows,
)
from cairn.app.ontology.types import coerce_stored
from cairn.retrieval.embeddings import Embedder

Progress = Callable[[str, int, int], None]
INSERT_CHUNK = 500
MAX_KEY_CHARS = 512


@dataclass
class LoadReport:
    """What a load did: per object type, instances loaded; strings embedded; generation."""

    kn_id: str
    generation: int
    instances: dict[str, int] = field(default_factory=dict)
    embedded: int = 0
    vector_model: str | None = None


def instance_key(values: list[Any]) -> str:
    """Canonical JSON of primary-key values (the instance's identity inside its type)."""
    return json.dumps(values, ensure_ascii=False, separators=(",", ":"))


def vector_b64(vector: np.ndarray) -> str:
    """float32 little-endian bytes of a vector, base64."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def vector_from_b64(text: str) -> np.ndarray:
    """Inverse of :func:`vector_b64`."""
    return np.frombuffer(base64.b64decode(text), dtype="<f4")


def type_rows(spec: ObjectTypeSpec, source: SourceRows) -> list[tuple[str, dict[str, Any]]]:
    """Typed instances ``(key, data)`` of one object type.

    Raises:
        BadInput: a missing column, a value that does not parse as its type, a null or
            duplicate primary key (naming type, property and row number).
    """
    if source.rows:
        columns = set(source.rows[0])
        missing = [p.column or p.name for p in spec.properties if (p.column or p.name) not in columns]
        if missing:
            raise BadInput(
                f"object type {spec.id}: source has no column(s) {missing}; it has {sorted(columns)}",
                field=f"mapping.object_types.{spec.id}",
            )
    out: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    for n, row in enumerate(source.rows, start=1):
        data = {
            p.name: coerce_stored(row.get(p.column or p.name), p.type, field=f"{spec.id}.{p.name} (row {n})")
            for p in spec.properties
        }
        key_values = [data[k] for k in spec.primary_key]
        if any(v is None for v in key_values):
            raise BadInput(
                f"object type {spec.id}: row {n} has a null primary key {spec.primary_key}",
                field=f"mapping.object_types.{spec.id}.primary_key",
            )
        key = instance_key(key_values)
        if len(key) > MAX_KEY_CHARS:
            raise BadInput(
                f"object type {spec.id}: row {n} has a primary key over {MAX_KEY_CHARS} characters",
                field=f"mapping.object_types.{spec.id}.primary_key",
                limit=MAX_KEY_CHARS,
            )
        if key in seen:
            raise BadInput(
                f"object type {spec.id}: duplicate primary key {key} (row {n})",
                field=f"mapping.object_types.{spec.id}.primary_key",
            )
        seen.add(key)
        out.append((key, data))
    return out


async def read_source(
    mapping: MappingSpec,
    source_dir: Path | None,
    files: dict[str, str] | None = None,
    allowed_roots: Sequence[Path] | None = None,
) -> list[SourceRows]:
    """Source rows of every type (CSV needs ``source_dir`` or inline ``files``).

    Args:
        allowed_roots: Directories every CSV file's real path must lie under (GraphQL
            loads); None for no restriction (CLI). See :func:`csv_files_of`.

    Raises:
        BadInput: CSV source without files, a file outside ``allowed_roots``, or reading failed.
    """
    if mapping.source.kind == "csv":
        if files is None:
            if source_dir is None:
                raise BadInput(
                    "this mapping reads CSV files: give the directory holding them (or the files)", field="sourceDir"
                )
            validate_path(str(source_dir), "sourceDir")
            if not Path(source_dir).is_dir():
                raise BadInput(f"source directory {source_dir} does not exist", field="sourceDir")
            files = await asyncio.to_thread(csv_files_of, Path(source_dir), allowed_roots)
        return await asyncio.to_thread(read_csv_rows, mapping, files)
    if files is not None or source_dir is not None:
        raise BadInput(
            "this mapping reads a SQL database (source.kind: sql); CSV files do not apply", field="sourceDir"
        )
    return await read_sql_rows(mapping)


async def load_network(
    db: Database,
    embedder: Embedder | None,
    *,
    workspace_id: str,
    mapping: MappingSpec,
    source_dir: Path | None = None,
    files: dict[str, str] | None = None,
    progress: Progress | None = None,
    allowed_roots: Sequence[Path] | None = None,
) -> LoadReport:
    """Load (or replace) a knowledge network from its mapping.

    Args:
        db: :class:`app.core.db.Database`.
        embedder: Embedding provider for vector-indexed properties; None stores no vectors
            (those properties then offer no ``knn``).
        workspace_id: Owner workspace.
        mapping: Parsed mapping.
        source_dir: Directory of CSV files (``source.kind: csv``).
        files: Or the CSV files inline, ``{table: csv text}``.
        progress: ``progress(stage, done, total)`` (stages ``read``, ``embed``, ``store``).
        allowed_roots: See :func:`read_source` (GraphQL passes ``CAIRN_ONTOLOGY_SOURCE_DIRS``).

    Returns:
        A :class:`LoadReport`.

    Raises:
        BadInput: source or data errors (see :func:`type_rows`, :func:`read_source`).
    """
    sources = {s.ot_id: s for s in await read_source(mapping, source_dir, files, allowed_roots)}
    typed = {spec.id: type_rows(spec, sources[spec.id]) for spec in mapping.object_types}
    if progress:
        progress("read", len(typed), len(typed))
    texts: list[str] = []
    index: dict[str, int] = {}
    for spec in mapping.object_types:
        for p in spec.properties:
            if p.vector:
                for _key, data in typed[spec.id]:
                    value = data.get(p.name)
                    if value and value not in index:
                        index[value] = len(texts)
                        texts.append(value)
    matrix = None
    if embedder is not None and texts:
        parts = []
        for start in range(0, len(texts), 64):
            parts.append(await asyncio.to_thread(embedder.encode, texts[start : start + 64]))
            if progress:
                progress("embed", min(start + 64, len(texts)), len(texts))
        matrix = np.concatenate(parts, axis=0)
    model = embedder.name if embedder is not None and matrix is not None else None
    report = LoadReport(
        kn_id=mapping.id, generation=1, embedded=len(texts) if matrix is not None else 0, vector_model=model
    )
    now = utcnow()
    async with db.session() as s:
        # read-generation-then-replace: concurrent loads of one network take turns
        await serialize(s, "ontology-network", workspace_id, mapping.id)
        old = await s.get(KnowledgeNetwork, (workspace_id, mapping.id), populate_existing=True)
        generation = (old.generation + 1) if old else 1
        report.generation = generation
        await s.execute(
            delete(ObjectInstance).where(
                col(ObjectInstance.workspace_id) == workspace_id, col(ObjectInstance.kn_id) == mapping.id
            )
        )
        await s.execute(
            delete(ObjectType).where(col(ObjectType.workspace_id) == workspace_id, col(ObjectType.kn_id) == mapping.id)
        )
        if old:
            old.name, old.description, old.generation, old.loaded_at = (
                mapping.name,
                mapping.description,
                generation,
                now,
            )
            s.add(old)
        else:
            s.add(
                KnowledgeNetwork(
                    workspace_id=workspace_id,
                    kn_id=mapping.id,
                    name=mapping.name,
                    description=mapping.description,
                    generation=generation,
                    loaded_at=now,
                )
            )
        for spec in mapping.object_types:
            rows = typed[spec.id]
            vector_props = [p.name for p in spec.properties if p.vector]
            s.add(
                ObjectType(
                    workspace_id=workspace_id,
                    kn_id=mapping.id,
                    ot_id=spec.id,
                    name=spec.name,
                    description=spec.description,
                    primary_key=list(spec.primary_key),
                    properties=[
                        {
                            "name": p.name,
                            "type": p.type,
                            "description": p.description,
                            "fullText": p.full_text,
                            "vector": p.vector and matrix is not None,
                        }
                        for p in spec.properties
                    ],
                    concept_groups=list(spec.concept_groups),
                    vector_model=model if vector_props else None,
                    instance_count=len(rows),
                    generation=generation,
                )
            )
            await s.flush()
            for start in range(0, len(rows), INSERT_CHUNK):
                batch = []
                for key, data in rows[start : start + INSERT_CHUNK]:
                    vectors = {}
                    if matrix is not None:
                        for name in vector_props:
                            value = data.get(name)
                            if value:
                                vectors[name] = vector_b64(matrix[index[value]])
                    batch.append(
                        {
                            "workspace_id": workspace_id,
                            "kn_id": mapping.id,
                            "ot_id": spec.id,
                            "key": key,
                            "data": data,
                            "vectors": vectors,
                        }
                    )
                await s.execute(insert(ObjectInstance), batch)
            report.instances[spec.id] = len(rows)
            if progress:
                progress("store", len(report.instances), len(mapping.object_types))
    return report


async def list_networks(s: AsyncSession, *, workspace_id: str) -> list[KnowledgeNetwork]:
    """The workspace's knowledge networks, by id."""
    rows = await s.execute(
        select(KnowledgeNetwork)
        .where(col(KnowledgeNetwork.workspace_id) == workspace_id)
        .order_by(col(KnowledgeNetwork.kn_id))
    )
    return list(rows.scalars().all())
