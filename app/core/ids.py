"""Identifiers and clocks.

Random ids are ``<prefix>_<24 hex>``; stable ids hash their parts with SHA-256 so that
re-ingesting the same content yields the same id (passage ids are stable for unchanged
content). Times are timezone-aware UTC (SQLModel rejects naive datetimes).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime


def utcnow() -> datetime:
    """Current UTC time, timezone-aware, truncated to microseconds."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """Return ``value`` in UTC; naive datetimes (as SQLite returns them) are taken as UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def new_id(prefix: str) -> str:
    """A random id ``<prefix>_<24 hex>`` (96 bits)."""
    return f"{prefix}_{secrets.token_hex(12)}"


def stable_id(prefix: str, *parts: str | int) -> str:
    """A deterministic id ``<prefix>_<24 hex>`` from SHA-256 over the NUL-joined parts."""
    digest = hashlib.sha256("\x00".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return f"{prefix}_{digest[:24]}"


def sha256_text(text: str) -> str:
    """Hex SHA-256 of the UTF-8 bytes of ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
