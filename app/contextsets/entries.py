"""Context sets: the entry rows of a set, replaced a section at a time.

A section given in an update (``definitions``, ``instructions``, …) replaces that section
whole; entry ids are stable for unchanged content (``stable_id`` over set, kind, content), so
an unchanged definition keeps its id, ``createdAt`` and ``createdBy`` across versions.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.contextsets.types import TRUST_APPROVED, ContextSetWrite
from cairn.app.core.ids import stable_id
from cairn.app.core.models import ContextSet, ContextSetEntry


def _rows_for(set_id: str, workspace_id: str, w: ContextSetWrite) -> dict[str, list[dict[str, Any]]]:
    """New entry columns per kind for the sections ``w`` replaces."""
    out: dict[str, list[dict[str, Any]]] = {}

    def add(kind: str, content: tuple, cols: dict[str, Any]) -> None:
        rows = out.setdefault(kind, [])
        occurrence = sum(1 for r in rows if r["_content"] == content)
        rows.append(
            {
                "_content": content,
                "id": stable_id("cse", set_id, kind, *[c or "" for c in content], occurrence),
                "kind": kind,
                "position": len(rows),
                **cols,
            }
        )

    if w.verified_answers is not None:
        out["VERIFIED_ANSWER"] = []
        for va in w.verified_answers:
            add(
                "VERIFIED_ANSWER",
                (va.question, va.answer, va.document_id, va.passage_id),
                {"key": va.question, "value": va.answer, "document_id": va.document_id, "passage_id": va.passage_id},
            )
    if w.definitions is not None:
        out["DEFINITION"] = []
        for d in w.definitions:
            add(
                "DEFINITION",
                (d.term, d.definition, "\x1f".join(d.aliases)),
                {"key": d.term, "value": d.definition, "aliases": list(d.aliases)},
            )
    if w.instructions is not None:
        out["INSTRUCTION"] = []
        for text in w.instructions:
            add("INSTRUCTION", (text,), {"value": text})
    if w.required_evidence is not None:
        out["REQUIRED_EVIDENCE"] = []
        for r in w.required_evidence:
            add(
                "REQUIRED_EVIDENCE",
                (r.document_id, r.passage_id),
                {"document_id": r.document_id, "passage_id": r.passage_id},
            )
    return out


async def replace_entries(s: AsyncSession, row: ContextSet, w: ContextSetWrite, actor: str, now: datetime) -> list[str]:
    """Replace the sections ``w`` gives; returns the names of the sections that changed."""
    new = _rows_for(row.id, row.workspace_id, w)
    changed: list[str] = []
    for kind, rows in new.items():
        old = {
            e.id: e
            for e in (
                await s.execute(
                    select(ContextSetEntry).where(
                        col(ContextSetEntry.context_set_id) == row.id, col(ContextSetEntry.kind) == kind
                    )
                )
            ).scalars()
        }
        if [(r["id"], r["position"]) for r in rows] != sorted(
            ((e.id, e.position) for e in old.values()), key=lambda x: x[1]
        ):
            changed.append(kind)
        await s.execute(
            delete(ContextSetEntry).where(
                col(ContextSetEntry.context_set_id) == row.id, col(ContextSetEntry.kind) == kind
            )
        )
        await s.flush()
        for r in rows:
            prev = old.get(r["id"])
            cols = {k: v for k, v in r.items() if not k.startswith("_")}
            s.add(
                ContextSetEntry(
                    context_set_id=row.id,
                    workspace_id=row.workspace_id,
                    trust=TRUST_APPROVED,
                    created_at=prev.created_at if prev else now,
                    created_by=prev.created_by if prev else actor,
                    **cols,
                )
            )
    await s.flush()
    return changed
