"""Loading the models a context pack needs before the first caller waits for them.

The embedders (all-MiniLM-L6-v2, and multilingual-e5-small when configured) load lazily on
their first ``encode_query``, and the cl100k tokenizer on its first count: 2–5 s on two
cores, more under load. A pack that pays for that misses its ``maxLatencyMs`` and comes back
``complete: false`` (``LATENCY``) with BM25 items only. So every serving entry point warms up
first, with this one function: ``cairn serve`` before ``/readyz`` says ready
(:func:`app.main.create_app`), ``cairn mcp`` before it reads the client's ``initialize``
(:mod:`app.cli.mcp`).
"""

from __future__ import annotations

import asyncio

from cairn.app.corpus.indexing import SearchIndexes
from cairn.retrieval.tokens import count_tokens

WARM_UP_QUERY = "warm up"


async def warm_models(indexes: SearchIndexes) -> str:
    """Load the tokenizer and every embedder of ``indexes`` by using each once (worker threads).

    Args:
        indexes: The process's :class:`~app.corpus.indexing.SearchIndexes`.

    Returns:
        What was warmed, for ``/readyz``'s ``model``: ``"loaded"``, or ``"none (LEXICAL only)"``
        without an embedder.

    Raises:
        Whatever loading a model raises (a missing model folder: ``OSError``).
    """
    await asyncio.to_thread(count_tokens, WARM_UP_QUERY)
    if indexes.embedder is None:
        return "none (LEXICAL only)"
    await asyncio.to_thread(indexes.embedder.encode_query, WARM_UP_QUERY)
    if indexes.multilingual is not None:
        await asyncio.to_thread(indexes.multilingual.encode_query, WARM_UP_QUERY)
    return "loaded"
