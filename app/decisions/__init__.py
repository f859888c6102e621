"""Decisions (SPEC §8): request validation, judging, judges (local Gemma, OpenAI-compatible), the runner with idempotency, agent sessions."""
