"""Cairn: governed context for AI agents, served over GraphQL."""
