"""Conversations and interactions (trace context, operation receipts, client invocation ids).

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from app.interactions.service import Receipt, check_trace, input_sha256, run_traced, start_interaction

__all__ = ["Receipt", "check_trace", "input_sha256", "run_traced", "start_interaction"]
