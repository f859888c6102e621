"""Conversations and interactions (trace context, operation receipts, client invocation ids)."""
