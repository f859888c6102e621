"""What a source yields: :class:`SourceDocument` values, and :class:`SkippedFile` reports."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class SkippedFile:
    """A file (or document) not ingested, and why (e.g. "not text: a PDF file (application/pdf)")."""

    path: str
    reason: str


@dataclass(frozen=True)
class SourceDocument:
    """One document read from a source, before versioning."""

    external_id: str
    title: str
    text: str
    media_type: str = "text/plain"
    valid_from: datetime | None = None
    valid_to: datetime | None = None
