"""Passages' embeddings kept in SQL, so a passage is encoded once per model for every worker.

Each worker keeps its own vector index in its data dir (embedded Qdrant Edge) and, catching up
with the change log, used to encode every passage again: ~8 minutes per 10k passages on 2
cores (all-MiniLM-L6-v2), so a new worker took that long to become ready. The worker that
first indexes a passage now stores its vectors (``passage_vector``: float32 bytes, exactly what
went into its own index, with the SHA-256 of the embedded text); a worker catching up, and a
``reindex`` of the vectors, read them and encode only what is missing or was embedded from a
different text. Same bits in every worker's index, so packs agree across workers.

Keys are ``(passage id, model name)``: a model of another name (or dimension) never reuses
another's vectors. Rows live and go with their passage.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import select
from sqlmodel import col

from cairn.app.core.db import Database, insert_if_absent
from cairn.app.core.models import PassageVector

READ_BATCH = 500
"""Keys per SQL read."""


def input_sha256(text: str) -> str:
    """SHA-256 (hex) of the exact text given to the encoder."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class StoredVector:
    """One passage's vector by one model.

    Attributes:
        passage_id, model: The key.
        input_sha256: SHA-256 of the text embedded (:func:`input_sha256`).
        vector: Shape ``(dim,)``, float32.
    """

    passage_id: str
    model: str
    input_sha256: str
    vector: np.ndarray


async def read_vectors(db: Database, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], StoredVector]:
    """The stored vectors of ``keys`` (``(passage id, model)``); absent keys are left out.

    One SQL round trip per :data:`READ_BATCH` keys. Vectors are read-only float32 arrays.
    """
    by_model: dict[str, list[str]] = {}
    for pid, model in dict.fromkeys(keys):
        by_model.setdefault(model, []).append(pid)
    out: dict[tuple[str, str], StoredVector] = {}
    async with db.session() as s:
        for model, ids in by_model.items():
            for i in range(0, len(ids), READ_BATCH):
                rows = await s.execute(
                    select(
                        col(PassageVector.passage_id), col(PassageVector.input_sha256), col(PassageVector.vector)
                    ).where(
                        col(PassageVector.model) == model, col(PassageVector.passage_id).in_(ids[i : i + READ_BATCH])
                    )
                )
                for pid, sha, raw in rows.all():
                    out[(pid, model)] = StoredVector(pid, model, sha, np.frombuffer(raw, dtype="<f4"))
    return out


async def write_vectors(db: Database, vectors: Sequence[StoredVector]) -> None:
    """Store ``vectors`` (float32, little-endian); a key already stored is left as it is (another
    worker stored it first: the same passage, the same model)."""
    if not vectors:
        return
    values = [
        {
            "passage_id": v.passage_id,
            "model": v.model,
            "input_sha256": v.input_sha256,
            "vector": np.asarray(v.vector, dtype="<f4").tobytes(),
        }
        for v in vectors
    ]
    async with db.session() as s:
        await s.execute(insert_if_absent(s, PassageVector, ["passage_id", "model"]), values)
