"""Conversations and interactions (trace context, operation receipts, client invocation ids).

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from cairn.app.interactions.operations import InteractionInfo, TracedCall, open_interaction, run_traced_call
from cairn.app.interactions.service import Receipt, check_trace, input_sha256, run_traced, start_interaction

__all__ = [
    "InteractionInfo",
    "Receipt",
    "TracedCall",
    "check_trace",
    "input_sha256",
    "open_interaction",
    "run_traced",
    "run_traced_call",
    "start_interaction",
]
