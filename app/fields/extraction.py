"""Extraction of learned fields: document versions run through the collection's ranker, each
value stored with its citation.

Extraction (:func:`extract_collection`): every live document's current version whose
extraction is missing or older than the collection's ``revision`` (bumped when definitions
change or the ranker is retrained) is run through the ranker
(:func:`app.fields.training.ranker_for`); its values replace the version's previous ``MODEL``
rows. Each value is stored with its span in the version text, the passage holding the span
and that passage's SHA-256 (the citation); a field with no value gets one row with ``value``
null and an ``uncited_reason``. New versions (ingest) are extracted by the next
:func:`extract_collection`, which ``cairn ingest`` and ``upsertDocument`` run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.db import Database
from cairn.app.core.ids import new_id, utcnow
from cairn.app.core.models import DocumentVersion, FieldExtraction, FieldValue, Passage, VersionPassage
from cairn.app.corpus import choose_versions
from cairn.app.fields.ranker import Ranker
from cairn.app.fields.store import definitions, get_collection_row, live_versions, passage_of, spec_of, state
from cairn.app.fields.training import ranker_for
from cairn.app.fields.types import FieldSpec

NO_VALUE = "NO_CANDIDATE: no stated value scored above the field's threshold"


@dataclass
class ExtractReport:
    """One extraction run: versions extracted, values stored (non-null), null values, seconds."""

    documents: int = 0
    values: int = 0
    nulls: int = 0
    seconds: float = 0.0


async def extract_version(
    s: AsyncSession, version: DocumentVersion, collection_id: str, specs: Sequence[FieldSpec], ranker: Ranker
) -> tuple[int, int]:
    """Extract one version's fields and store them (replacing its MODEL rows). Returns
    (values, nulls)."""
    spans = [
        (pid, ps, pe, sha)
        for pid, ps, pe, sha in (
            await s.execute(
                select(
                    col(VersionPassage.passage_id),
                    col(VersionPassage.start),
                    col(VersionPassage.end),
                    col(Passage.sha256),
                )
                .join(Passage, col(Passage.id) == col(VersionPassage.passage_id))
                .where(col(VersionPassage.version_id) == version.id)
                .order_by(col(VersionPassage.start))
            )
        ).all()
    ]
    await s.execute(
        delete(FieldValue).where(col(FieldValue.version_id) == version.id, col(FieldValue.source) == "MODEL")
    )
    now = utcnow()

    def row(spec: FieldSpec, **fields: Any) -> FieldValue:
        """A MODEL value row of this version for ``spec`` (``fields``: the value or the reason)."""
        return FieldValue(
            id=new_id("fv"),
            workspace_id=version.workspace_id,
            collection_id=collection_id,
            document_id=version.document_id,
            version_id=version.id,
            field_name=spec.name,
            recorded_at=now,
            **fields,
        )

    extracted = ranker.extract(version.text, specs)
    n_values = n_nulls = 0
    for spec in specs:
        chosen = extracted.get(spec.name, [])
        rows = []
        for e in chosen:
            cited = None
            for start, end in e.spans:  # the best span a passage holds whole
                hit = passage_of(spans, start, end)
                if hit:
                    cited = (start, end, *hit)
                    break
            if cited is None:
                continue
            rows.append((e, cited))
        if not rows:
            reason = NO_VALUE if not chosen else "UNCITABLE: the value's span crosses a passage boundary"
            s.add(row(spec, uncited_reason=reason))
            n_nulls += 1
            continue
        for ordinal, (e, (start, end, pid, sha)) in enumerate(rows):
            s.add(
                row(
                    spec,
                    ordinal=ordinal,
                    value=e.value,
                    key=e.key,
                    score=round(e.score, 4),
                    passage_id=pid,
                    start=start,
                    end=end,
                    sha256=sha,
                )
            )
            n_values += 1
    return n_values, n_nulls


async def extract_collection(
    db: Database,
    *,
    workspace_id: str,
    collection_id: str,
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ExtractReport:
    """Extract every live document's current version that is not extracted at the
    collection's revision (``force``: all of them). ``progress(done, total)`` after each
    document. A collection without field definitions extracts nothing."""
    report = ExtractReport()
    started = time.perf_counter()
    async with db.session() as s:
        await get_collection_row(s, workspace_id, collection_id)
        specs = [spec_of(r) for r in await definitions(s, collection_id)]
        if not specs:
            return report
        st = await state(s, workspace_id, collection_id)
        revision = st.revision
        ranker, _ = ranker_for(st, specs)
        now = utcnow()
        current = choose_versions(await live_versions(s, collection_id), valid_time=now, system_time=now, now=now)
        done = dict(
            (
                await s.execute(
                    select(col(FieldExtraction.version_id), col(FieldExtraction.revision)).where(
                        col(FieldExtraction.collection_id) == collection_id
                    )
                )
            ).all()
        )
    todo = sorted(v.id for v in current.values() if force or done.get(v.id) != revision)
    for i, vid in enumerate(todo, start=1):
        async with db.session() as s:
            version = await s.get(DocumentVersion, vid)
            if version is None:
                continue
            values, nulls = await extract_version(s, version, collection_id, specs, ranker)
            mark = await s.get(FieldExtraction, vid)
            if mark is None:
                s.add(FieldExtraction(version_id=vid, collection_id=collection_id, revision=revision, extracted_at=now))
            else:
                mark.revision, mark.extracted_at = revision, now
        report.documents += 1
        report.values += values
        report.nulls += nulls
        if progress:
            progress(i, len(todo))
    report.seconds = round(time.perf_counter() - started, 2)
    return report
