"""Structured logs: one JSON object per line with the trace id where one is known.

Strawberry would log every GraphQL error with the full query text; our schema's
``process_errors`` logs a compact line instead, so bad input cannot flood logs.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime


class JsonFormatter(logging.Formatter):
    """``{"ts","level","logger","msg","trace_id"?,"exc"?}`` per line."""

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key in ("trace_id", "operation", "coordinate", "status", "boundary", "ms"):
            value = getattr(record, key, None)
            if value is not None:
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def configure_logging(level: str = "INFO") -> None:
    """Install the JSON formatter on the ``cairn`` logger once (idempotent)."""
    logger = logging.getLogger("cairn")
    logger.setLevel(level.upper())
    if not any(getattr(h, "_cairn", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonFormatter())
        handler._cairn = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
        logger.propagate = False
    logging.getLogger("strawberry.execution").setLevel(logging.CRITICAL)
