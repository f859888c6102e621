"""Passage reads and citation checks (the MCP ``get_passage``/``get_section``/``get_citation`` tools).

Both read the document as of a bitemporal point with :func:`app.corpus.as_of.read_document`
(so documents and collections deleted by the read's system time are not found, exactly as
``document(id)``; one deleted later reads as it was then), then work
on the chosen version's text: a passage's text is ``version.text[start:end]`` and its
``sha256`` is the SHA-256 of that text's UTF-8 bytes, as in pack citations.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from cairn.app.core.errors import BadInput, NotFound
from cairn.app.core.ids import sha256_text
from cairn.app.core.models import Passage
from cairn.app.core.text_rules import validate_identifier
from cairn.app.corpus.as_of import read_document

MAX_NEIGHBOURS = 10
"""At most this many passages on each side of a section's centre."""


def span_sha256(text: str) -> str:
    """SHA-256 (hex) of ``text`` encoded as UTF-8: the ``sha256`` of a citation."""
    return sha256_text(text)


@dataclass(frozen=True)
class PassageView:
    """One passage of the version visible at the read point, with its exact span.

    ``start``/``end`` are character offsets (Python ``str`` indexes) into the version text;
    ``text == version.text[start:end]``; ``sha256`` is the hash of ``text``.
    """

    passage_id: str
    document_id: str
    version_id: str
    collection_id: str
    external_id: str
    document_title: str
    ordinal: int
    start: int
    end: int
    text: str
    sha256: str


@dataclass(frozen=True)
class CitationCheck:
    """The outcome of checking a cited span against the text visible at the read point.

    ``status``: ``VERIFIED`` (the current text's ``[start:end]`` hashes to the cited sha256),
    ``MOVED`` (the cited text is still there, at ``relocated_start``/``relocated_end``) or
    ``CHANGED`` (it is not). ``cited_version_matches`` says whether the cited version's own
    span hashes to the sha256 (None when no version was given or the span is outside it).
    """

    status: str
    document_id: str
    current_version_id: str
    cited_version_id: str | None
    cited_version_matches: bool | None
    start: int
    end: int
    current_text: str
    current_sha256: str
    relocated_start: int | None = None
    relocated_end: int | None = None


def _check_time(value: datetime | None, field: str) -> None:
    if value is not None and value.tzinfo is None:
        raise BadInput(f"{field} needs a timezone (e.g. 2025-01-01T00:00:00Z)", field=field)


async def read_section(
    s: AsyncSession,
    *,
    workspace_id: str,
    passage_id: str,
    before: int = 0,
    after: int = 0,
    valid_time: datetime | None = None,
    system_time: datetime | None = None,
) -> list[PassageView]:
    """A passage and up to ``before``/``after`` neighbours (by ordinal) in the visible version.

    Returns:
        The passages in document order (the asked one included).

    Raises:
        BadInput: ``before``/``after`` outside 0–10, or a time without a zone.
        NotFound: no such passage in the workspace, its document was deleted by the read's
            system time, or the version
            visible at the read point does not contain it (``field="passageId"``).
    """
    validate_identifier(passage_id, "passageId")
    for name, value in (("before", before), ("after", after)):
        if not 0 <= value <= MAX_NEIGHBOURS:
            raise BadInput(f"{name} must be 0–{MAX_NEIGHBOURS}", field=name, limit=f"0-{MAX_NEIGHBOURS}")
    _check_time(valid_time, "asOf.validTime")
    _check_time(system_time, "asOf.systemTime")
    row = await s.get(Passage, passage_id)
    if row is None or row.workspace_id != workspace_id:
        raise NotFound(f"passage {passage_id!r} not found", field="passageId")
    try:
        read = await read_document(
            s, workspace_id=workspace_id, document_id=row.document_id, valid_time=valid_time, system_time=system_time
        )
    except NotFound:
        raise NotFound(f"passage {passage_id!r} not found", field="passageId") from None
    version = next((v for v in read.versions if v.id == read.chosen_version_id), None)
    spans = read.passages.get(read.chosen_version_id or "", [])
    index = next((i for i, sp in enumerate(spans) if sp[0] == passage_id), None)
    if version is None or index is None:
        raise NotFound(
            f"passage {passage_id!r} is not in the version of its document visible at that time", field="passageId"
        )
    doc = read.document
    out = []
    for pid, ordinal, start, end in spans[max(0, index - before) : index + after + 1]:
        text = version.text[start:end]
        out.append(
            PassageView(
                passage_id=pid,
                document_id=doc.id,
                version_id=version.id,
                collection_id=doc.collection_id,
                external_id=doc.external_id,
                document_title=doc.title,
                ordinal=ordinal,
                start=start,
                end=end,
                text=text,
                sha256=span_sha256(text),
            )
        )
    return out


async def check_citation(
    s: AsyncSession,
    *,
    workspace_id: str,
    document_id: str,
    start: int,
    end: int,
    sha256: str,
    version_id: str | None = None,
    valid_time: datetime | None = None,
    system_time: datetime | None = None,
) -> CitationCheck:
    """Check a cited span (``start``/``end`` character offsets, ``sha256`` of its text) against
    the document text visible at the read point (default now).

    Raises:
        BadInput: offsets not ``0 <= start < end``, a malformed sha256, a time without a zone.
        NotFound: no such live document, or ``version_id`` is not one of its versions.
    """
    validate_identifier(document_id, "documentId")
    if version_id is not None:
        validate_identifier(version_id, "versionId")
    if not 0 <= start < end:
        raise BadInput("start and end must satisfy 0 <= start < end", field="end")
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise BadInput("sha256 must be 64 lower-case hex characters", field="sha256", limit=64)
    _check_time(valid_time, "asOf.validTime")
    _check_time(system_time, "asOf.systemTime")
    read = await read_document(
        s, workspace_id=workspace_id, document_id=document_id, valid_time=valid_time, system_time=system_time
    )
    current = next((v for v in read.versions if v.id == read.chosen_version_id), None)
    if current is None:
        raise NotFound(f"document {document_id!r} has no version visible at that time", field="documentId")
    cited_text: str | None = None
    cited_matches: bool | None = None
    if version_id is not None:
        cited = next((v for v in read.versions if v.id == version_id), None)
        if cited is None:
            raise NotFound(f"version {version_id!r} is not a version of document {document_id!r}", field="versionId")
        if end <= len(cited.text):
            cited_text = cited.text[start:end]
            cited_matches = span_sha256(cited_text) == sha256
    now_text = current.text[start:end] if end <= len(current.text) else ""
    now_sha = span_sha256(now_text)
    relocated: tuple[int, int] | None = None
    if now_sha == sha256:
        status = "VERIFIED"
    else:
        status = "CHANGED"
        if cited_text is not None and cited_matches:
            at = current.text.find(cited_text)
            if at >= 0:
                status, relocated = "MOVED", (at, at + len(cited_text))
    return CitationCheck(
        status=status,
        document_id=document_id,
        current_version_id=current.id,
        cited_version_id=version_id,
        cited_version_matches=cited_matches,
        start=start,
        end=end,
        current_text=now_text,
        current_sha256=now_sha,
        relocated_start=relocated[0] if relocated else None,
        relocated_end=relocated[1] if relocated else None,
    )
