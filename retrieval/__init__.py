"""Search machinery for Cairn: chunking, token counting, analysis, lexical and vector
indexes, embeddings, fusion, deduplication and packing.

This package knows nothing about tenants, GraphQL or SQL: callers pass plain ids
(workspace, collection, document, passage) and get plain ranked ids back. Import the
submodules directly (``from cairn.retrieval.fusion import rrf``); importing this package is
cheap and loads no model, index or engine.
"""

from __future__ import annotations
