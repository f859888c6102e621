"""What a source yields: :class:`SourceDocument` values, and :class:`SkippedFile` reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class SkippedFile:
    """A file (or document) not ingested, and why (e.g. "not text: a PDF file (application/pdf)").

    Attributes:
        path: The file's path relative to the ingested folder (a CSV row: ``<path>#row=<n>``).
        reason: Why it was skipped.
        limit: The bound passed when it was skipped for its size (bytes, or documents), else
            None (not compared: the path and reason identify a skip).
    """

    path: str
    reason: str
    limit: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class SourceDocument:
    """One document read from a source, before versioning."""

    external_id: str
    title: str
    text: str
    media_type: str = "text/plain"
    valid_from: datetime | None = None
    valid_to: datetime | None = None
