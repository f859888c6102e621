"""Replay ``VERIFY`` of a pack's context-set items (SPEC §3; issue 32 items 9 and 10).

A replay record keeps each approved item (verified answer, definition, instruction) as its
set id, ``"<entry id>@<set version>"`` and the SHA-256 of the item's text, and required
evidence by its citation (document, version, passage, span, SHA-256). :func:`check_entries`
says, per recorded item, what the set holds now:

- the set is gone, deactivated or of another workspace, or the caller is bound to another
  set → ``UNAVAILABLE``;
- an approved item is compared **by content**, never by the set's version number: its entry,
  or the entry that took its place, is rendered as a pack item (:func:`entry_text`) and its
  SHA-256 compared with the recorded one → ``UNCHANGED`` if equal, else ``CHANGED``. Entry
  ids are content hashes (:mod:`app.contextsets.entries`), so an edited entry has a new id;
  the entry that took its place is one of the same kind and identity — a verified answer's
  question or a definition's term (folded as the library compares terms), an instruction's
  position — that was not in the set at the recorded version (read from that version's
  snapshot). No such entry (deleted) → ``UNAVAILABLE``. A change elsewhere in the set (its
  description, scope or another entry) leaves the item ``UNCHANGED``.
- required evidence: ``UNAVAILABLE`` when the set no longer requires that document or
  passage, else ``REQUIRED``: the caller then checks the cited text against the document's
  current version as for any cited item.

``current`` names what was compared: ``"<entry id>@<set version>"`` (None when unavailable).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.contextsets.loading import entry_of
from cairn.app.contextsets.matching import fold
from cairn.app.contextsets.types import Entry, entry_text
from cairn.app.core.ids import sha256_text
from cairn.app.core.models import ContextSet, ContextSetEntry, ContextSetVersion
from cairn.app.governance import Principal

APPROVED_KINDS = ("VERIFIED_ANSWER", "DEFINITION", "INSTRUCTION")
_SECTIONS = {"VERIFIED_ANSWER": "verifiedAnswers", "DEFINITION": "definitions", "INSTRUCTION": "instructions"}


@dataclass(frozen=True)
class RecordedEntry:
    """One context-set item of a replay record.

    Approved kinds carry ``entry_id``, ``set_version`` and ``sha256`` (of the item text);
    ``REQUIRED_EVIDENCE`` carries the cited ``document_id`` and ``passage_id`` (None: the
    whole document).
    """

    kind: str
    context_set_id: str
    entry_id: str = ""
    set_version: int = 0
    sha256: str = ""
    document_id: str | None = None
    passage_id: str | None = None


@dataclass(frozen=True)
class EntryCheck:
    """What the set holds now for one recorded item: ``status`` is ``UNCHANGED``,
    ``CHANGED``, ``UNAVAILABLE`` or (required evidence still required) ``REQUIRED``;
    ``current`` is ``"<entry id>@<set version>"`` of the entry compared, None when unavailable."""

    status: str
    current: str | None


def _identity(kind: str, position: int, key: str) -> tuple[str, str]:
    """What makes a later entry the same entry edited: the question or term (folded), an
    instruction's position."""
    return (kind, str(position) if kind == "INSTRUCTION" else fold(key))


def _snapshot_identities(snapshot: dict[str, Any]) -> tuple[dict[str, tuple[str, str]], set[str]]:
    """``entry id → identity`` and every approved entry id of a version snapshot
    (:func:`app.contextsets.store.snapshot`)."""
    ids: dict[str, tuple[str, str]] = {}
    for kind, section in _SECTIONS.items():
        for pos, e in enumerate(snapshot.get(section) or []):
            key = e.get("question") if kind == "VERIFIED_ANSWER" else e.get("term", "")
            ids[str(e.get("id"))] = _identity(kind, pos, key or "")
    return ids, set(ids)


async def check_entries(s: AsyncSession, principal: Principal, recorded: Sequence[RecordedEntry]) -> list[EntryCheck]:
    """One :class:`EntryCheck` per recorded item, in order (module doc). Reads the sets, their
    entries and, for entries no longer in their set, the recorded versions' snapshots."""
    if not recorded:
        return []
    set_ids = sorted({r.context_set_id for r in recorded})
    rows = (
        await s.execute(
            select(col(ContextSet.id), col(ContextSet.version), col(ContextSet.active)).where(
                col(ContextSet.id).in_(set_ids), col(ContextSet.workspace_id) == principal.workspace_id
            )
        )
    ).all()
    version_of = {sid: version for sid, version, active in rows if active and principal.context_set_id in (None, sid)}
    entries: dict[str, list[Entry]] = {sid: [] for sid in version_of}
    if version_of:
        for row in (
            await s.execute(select(ContextSetEntry).where(col(ContextSetEntry.context_set_id).in_(sorted(version_of))))
        ).scalars():
            entries[row.context_set_id].append(entry_of(row))
    by_id = {e.id: e for es in entries.values() for e in es}
    wanted = sorted(
        {
            (r.context_set_id, r.set_version)
            for r in recorded
            if r.kind in APPROVED_KINDS and r.context_set_id in version_of and r.entry_id not in by_id
        }
    )
    snapshots: dict[tuple[str, int], dict[str, Any]] = {}
    if wanted:
        for sid, number, snap in (
            await s.execute(
                select(
                    col(ContextSetVersion.context_set_id),
                    col(ContextSetVersion.number),
                    col(ContextSetVersion.snapshot),
                ).where(
                    col(ContextSetVersion.context_set_id).in_(sorted({w[0] for w in wanted})),
                    col(ContextSetVersion.number).in_(sorted({w[1] for w in wanted})),
                )
            )
        ).all():
            snapshots[(sid, number)] = dict(snap)
    return [_check(r, version_of, entries, by_id, snapshots) for r in recorded]


def _check(
    r: RecordedEntry,
    version_of: dict[str, int],
    entries: dict[str, list[Entry]],
    by_id: dict[str, Entry],
    snapshots: dict[tuple[str, int], dict[str, Any]],
) -> EntryCheck:
    if r.context_set_id not in version_of:
        return EntryCheck("UNAVAILABLE", None)
    version = version_of[r.context_set_id]
    if r.kind == "REQUIRED_EVIDENCE":
        e = next(
            (
                e
                for e in entries[r.context_set_id]
                if e.kind == r.kind and e.document_id == r.document_id and e.passage_id == r.passage_id
            ),
            None,
        )
        return EntryCheck("UNAVAILABLE", None) if e is None else EntryCheck("REQUIRED", f"{e.id}@{version}")
    now = by_id.get(r.entry_id)
    if now is None or now.kind != r.kind:
        now = _successor(r, entries[r.context_set_id], snapshots.get((r.context_set_id, r.set_version)))
    if now is None:
        return EntryCheck("UNAVAILABLE", None)
    same = sha256_text(entry_text(now)) == r.sha256
    return EntryCheck("UNCHANGED" if same else "CHANGED", f"{now.id}@{version}")


def _successor(r: RecordedEntry, current: list[Entry], snapshot: dict[str, Any] | None) -> Entry | None:
    """The entry that took the recorded one's place (module doc), or None (deleted)."""
    if snapshot is None:  # the recorded version's row is missing: nothing to match on
        return None
    identities, then = _snapshot_identities(snapshot)
    identity = identities.get(r.entry_id)
    if identity is None:
        return None
    for e in current:
        if e.kind == r.kind and e.id not in then and _identity(e.kind, e.position, e.key) == identity:
            return e
    return None
