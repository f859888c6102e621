"""Governed agent memory: remember/recall/forget, PII masking, candidates, ranking, cited-source state, retention."""
