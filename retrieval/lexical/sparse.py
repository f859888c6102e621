"""The lexical leg as sparse BM25 vectors in Qdrant (cluster mode: no local search state).

With ``CAIRN_QDRANT_URL`` the BM25 leg lives in the same Qdrant collection as the dense
vectors, as the named sparse vector ``"bm25_a2"`` (:data:`BM25_VECTOR`, named with the analyzer version; :mod:`retrieval.vectors.qdrant_shared`), so any
number of workers answer from one index. Cairn still fuses the legs itself (:mod:`retrieval.fusion`).

Method — BM25 split between Cairn and Qdrant:

* Terms: exactly the Whoosh leg's (:func:`retrieval.analysis.analyze`: NFKC, words for Latin
  and other spaced scripts, lowercased, English stop words removed, Snowball-stemmed;
  overlapping bigrams for CJK, Thai, Lao, Khmer and Myanmar runs). The indexed text is the Whoosh leg's body: ``title + "\\n\\n" + text`` (title in
  body, the :class:`retrieval.lexical.whoosh_index.WhooshIndex` default).
* Document side (computed here): each term's saturated, length-normalised frequency
  ``tf·(k1 + 1) / (tf + k1·(1 − b + b·len/avg_length))`` (:func:`retrieval.lexical.bm25.term_score`
  with IDF 1) with k1 = 1.5, b = 0.75 (the Whoosh leg's; :data:`retrieval.lexical.bm25.SPARSE_BM25`),
  ``len`` = the passage's term count quantised to one byte as Whoosh stores it.
  ``avg_length`` is a constant (:data:`DEFAULT_AVG_LENGTH`, or
  ``CAIRN_BM25_AVG_LENGTH``), not the live corpus mean Whoosh uses: a corpus statistic
  would need shared state and rewriting every point when it moves. Cairn's passages are
  chunked to a bounded size, so the mean moves little; ``bench/sparse_congruence.py``
  measures the cost (fixed vs the corpus's true mean). Changing it needs ``cairn reindex``.
* Query side: each distinct query term once, value 1.0 (the Whoosh leg's OR of distinct
  terms). Qdrant multiplies it by the term's IDF (the collection's sparse vector config has
  ``modifier: idf``), so score = Σ idf(t)·w(t, d).
* IDF is Qdrant's, computed server-side over every point carrying the ``bm25`` vector (all
  workspaces, as Whoosh's index-wide IDF): ``ln(1 + (N − df + 0.5)/(df + 0.5))`` (the BM25 /
  Lucene form), where Whoosh uses ``ln(N/(df + 1)) + 1``. Whoosh's ``+ 1`` matters (SciFact
  nDCG@10 with Whoosh's scorer: 0.7473 with its own IDF, 0.7370 with Qdrant's, 0.7483 with
  Qdrant's + 1; 100 queries), so each point carries the same weights twice: ``bm25`` (IDF
  modifier) and ``bm25_tf`` (no modifier), and a search sums the two in Qdrant
  (prefetch both, ``FormulaQuery`` ``$score[0] + $score[1]``): score = Σ (idf(t) + 1)·w(t, d).
  The sum is taken over each prefetch's top ``4 × fetch`` (a point missing from one scores 0
  there), an approximation only for points ranked far down one leg.
* Term → sparse index: the first 4 bytes (big-endian) of BLAKE2b of the term's UTF-8
  (:func:`term_index`), stable across processes and versions. Collisions are not resolved
  (that would need a shared vocabulary): two terms with one index act as one term (their
  frequencies add in a passage, their document frequencies merge). Expected colliding
  pairs ≈ V²/2³³ for a vocabulary of V terms: ~0.1 at 30k terms, ~1.2 at 100k, ~116 at 1M;
  each affects only queries containing one of the two (rare) terms.
  :func:`vocabulary_collisions` counts them for a corpus (the bench prints it).

Scores are Qdrant's (float32); results are sorted by score desc, then passage id asc, and
the engine is asked for more until no tie crosses the cut (as the dense leg:
:func:`retrieval.vectors.types.ranked_search`). The visibility filters (workspace, and any
of the given collections / documents) run inside Qdrant; as-of resolution stays in SQL
after fusion, as with Whoosh (a passage is shared by the versions that contain it).
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from whoosh.util.numeric import byte_to_length, length_to_byte

from cairn.retrieval.analysis import ANALYZER_VERSION, analyze, analyze_runs
from cairn.retrieval.checks import check_ids
from cairn.retrieval.lexical.bm25 import IDF, SPARSE_BM25, BM25Params, term_score
from cairn.retrieval.lexical.schema import IndexedPassage
from cairn.retrieval.vectors.qdrant_shared import (
    count_holding,
    drop_named_vectors,
    ensure_payload_indexes,
    holding,
    is_local,
    open_client,
    payload_filter,
    unavailable,
    write_named_vectors,
)
from cairn.retrieval.vectors.types import point_id, ranked_search

BM25_VECTOR = f"bm25_a{ANALYZER_VERSION}"
"""Name of the sparse vector (IDF modifier) in the shared collection. It carries the analyzer
version (:data:`retrieval.analysis.ANALYZER_VERSION`; version 1 wrote ``bm25``): a collection
holding another version's terms has other sparse names, and the dense index re-creates it
(:class:`retrieval.vectors.client.ClientVectorIndex`), after which every passage is re-added."""
TF_VECTOR = f"bm25_tf_a{ANALYZER_VERSION}"
"""Name of the same weights without the IDF modifier (the ``+ 1`` of Whoosh's IDF, module doc;
version 1: ``bm25_tf``)."""
PREFETCH_FACTOR = 4

DEFAULT_AVG_LENGTH = 100.0
"""Average passage length in analysed terms assumed by the document weights (module doc).
Measured: SciFact abstracts chunked at the default 200 cl100k tokens average ~95 analysed terms."""


def sparse_config() -> dict[str, Any]:
    """The collection's sparse vector configs: :data:`BM25_VECTOR` with the IDF modifier, :data:`TF_VECTOR` without."""
    from qdrant_client import models

    return {
        BM25_VECTOR: models.SparseVectorParams(modifier=models.Modifier.IDF),
        TF_VECTOR: models.SparseVectorParams(),
    }


def term_index(term: str) -> int:
    """The sparse vector index of an analysed term: BLAKE2b-32 of its UTF-8, big-endian (u32)."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "big")


def quantised_length(length: int) -> float:
    """A term count as Whoosh stores field lengths (one byte, lossy above ~100)."""
    return float(byte_to_length(length_to_byte(length)))


def body_of(title: str, text: str) -> str:
    """The text the lexical legs index for a passage (title in body, as Whoosh's default)."""
    return f"{title}\n\n{text}" if title else text


def document_vector(
    text: str, *, params: BM25Params = SPARSE_BM25, avg_length: float = DEFAULT_AVG_LENGTH
) -> tuple[list[int], list[float]]:
    """BM25 document weights of ``text`` as a sparse vector (module doc).

    Args:
        text: The indexed text (:func:`body_of`).
        params: k1 and b (the IDF is applied by Qdrant at search time).
        avg_length: Assumed mean passage length in analysed terms, > 0.

    Returns:
        ``(indices ascending, weights)``; empty lists for text with no terms.
    """
    terms = analyze(text)
    if not terms:
        return [], []
    length = quantised_length(len(terms))
    tf = Counter(term_index(t) for t in terms)  # colliding terms merge here
    indices = sorted(tf)
    return indices, [
        term_score(tf=tf[i], length=length, avg_length=avg_length, idf=1.0, params=params) for i in indices
    ]


def query_vector(query: str) -> tuple[list[int], list[float]]:
    """The query's distinct analysed terms as a sparse vector of 1.0 each (the Whoosh leg's OR
    query with CJK bigrams as terms); ``([], [])`` when nothing is left after analysis."""
    seen: dict[str, None] = {}
    for run in analyze_runs(query):
        for term in run:
            seen.setdefault(term, None)
    weights = Counter(term_index(t) for t in seen)
    indices = sorted(weights)
    return indices, [float(weights[i]) for i in indices]


def vocabulary_collisions(texts: Iterable[str]) -> tuple[int, int]:
    """``(distinct terms, terms sharing an index with another term)`` over ``texts``."""
    vocabulary: set[str] = set()
    for text in texts:
        vocabulary.update(analyze(text))
    by_index = Counter(term_index(t) for t in vocabulary)
    return len(vocabulary), sum(n for n in by_index.values() if n > 1)


class SparseBM25Index:
    """The lexical leg in Qdrant: a :class:`retrieval.lexical.protocol.LexicalIndex`, as
    :class:`retrieval.lexical.whoosh_index.WhooshIndex`.

    Exactly one of ``url`` (server/cluster), ``path`` (qdrant-client local mode) or
    ``client`` (shared with the dense :class:`retrieval.vectors.client.ClientVectorIndex`;
    not closed by :meth:`close`) must be given. If the collection is missing it is created
    with only the ``bm25`` sparse vector (no embedder configured); otherwise it must have it.

    Args:
        url, path, client, api_key, timeout: Where the collection is (as the dense index).
        collection: Collection name (``CAIRN_QDRANT_COLLECTION``).
        bm25: k1, b and the IDF variant (default :data:`retrieval.lexical.bm25.SPARSE_BM25`); the IDF
            must be Qdrant's plus one, the one the collection's two sparse vectors compute.
        avg_length: Assumed mean passage length in analysed terms, > 0.

    Raises:
        ValueError: Bad arguments, or the collection exists without a ``bm25`` sparse vector
            with the IDF modifier.
        VectorStoreInUse / VectorStoreUnavailable: as :func:`retrieval.vectors.qdrant_shared.open_client`.
    """

    def __init__(
        self,
        *,
        url: str | None = None,
        path: Path | None = None,
        client: Any = None,
        api_key: str | None = None,
        collection: str = "passages",
        timeout: int = 30,
        bm25: BM25Params = SPARSE_BM25,
        avg_length: float = DEFAULT_AVG_LENGTH,
    ) -> None:
        from qdrant_client import models
        from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

        if sum(x is not None for x in (url, path, client)) != 1:
            raise ValueError("give exactly one of url, path or client")
        if not collection:
            raise ValueError("collection must be non-empty")
        if not avg_length > 0:
            raise ValueError(f"avg_length must be > 0, got {avg_length}")
        if bm25.idf is not IDF.LUCENE_PLUS_ONE:
            raise ValueError(f"the sparse index scores with Qdrant's IDF plus one, not {bm25.idf.value!r}")
        self._models = models
        self.collection = collection
        self.bm25, self.avg_length = bm25, float(avg_length)
        self._owns_client = client is None
        if client is None:
            client = open_client(url=url, path=path, api_key=api_key, timeout=timeout)
        self._client: Any = client
        self._lock = threading.Lock()
        self.migrated: str | None = None
        """Always None: a collection of another layout is re-created by the dense index that
        shares it (:class:`retrieval.vectors.client.ClientVectorIndex`, whose ``migrated`` says
        so); :class:`retrieval.lexical.protocol.LexicalIndex`'s member."""
        try:
            self._ensure_collection()
        except (ResponseHandlingException, UnexpectedResponse) as exc:
            if self._owns_client:
                client.close()
            if url is None:
                raise
            raise unavailable(url, exc) from None

    def _ensure_collection(self) -> None:
        models = self._models
        client = self._client
        if not client.collection_exists(self.collection):
            client.create_collection(self.collection, vectors_config={}, sparse_vectors_config=sparse_config())
        else:
            sparse = client.get_collection(self.collection).config.params.sparse_vectors or {}
            params = sparse.get(BM25_VECTOR)
            if params is None or params.modifier != models.Modifier.IDF or TF_VECTOR not in sparse:
                raise ValueError(
                    f"collection {self.collection!r} has no sparse vector {BM25_VECTOR!r} with the IDF modifier "
                    f"and {TF_VECTOR!r} (found {sorted(sparse)}): delete the collection and run `cairn reindex`"
                )
        ensure_payload_indexes(client, self.collection)

    @property
    def local(self) -> bool:
        """Whether the client runs qdrant-client's local mode (IDF computed by the client)."""
        return is_local(self._client)

    def add(self, passages: Sequence[IndexedPassage]) -> None:
        """Insert or replace passages' BM25 vectors (upsert by ``passage_id``; last one wins).

        A point's dense vector, if any, is kept. Visible to :meth:`search` when this returns.

        Raises:
            ValueError: If an id field is empty.
        """
        latest: dict[str, IndexedPassage] = {}
        for passage in passages:
            for name in ("passage_id", "workspace_id", "collection_id", "document_id"):
                value = getattr(passage, name)
                if not isinstance(value, str) or not value:
                    raise ValueError(f"{name} must be a non-empty string, got {value!r}")
            latest[passage.passage_id] = passage
        items = []
        for pid in sorted(latest):
            p = latest[pid]
            indices, values = document_vector(body_of(p.title, p.text), params=self.bm25, avg_length=self.avg_length)
            payload = {
                "passage_id": p.passage_id,
                "workspace_id": p.workspace_id,
                "collection_id": p.collection_id,
                "document_id": p.document_id,
            }
            vector = self._models.SparseVector(indices=indices, values=values)
            items.append((point_id(pid), {BM25_VECTOR: vector, TF_VECTOR: vector}, payload))
        if not items:
            return
        with self._lock:
            write_named_vectors(self._client, self.collection, items)

    def search(
        self,
        query: str,
        *,
        workspace_id: str,
        collection_ids: Sequence[str] | None = None,
        document_ids: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[tuple[str, float]]:
        """Rank passages of one workspace by BM25 (same arguments, order and errors as
        :meth:`retrieval.lexical.whoosh_index.WhooshIndex.search`; scores are Qdrant's)."""
        if not workspace_id:
            raise ValueError("workspace_id must be a non-empty string")
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        check_ids("collection_ids", collection_ids)
        check_ids("document_ids", document_ids)
        if (collection_ids is not None and not collection_ids) or (document_ids is not None and not document_ids):
            return []
        indices, values = query_vector(query)
        if not indices:
            return []
        models = self._models
        vector = models.SparseVector(indices=indices, values=values)
        query_filter = payload_filter(workspace_id, collection_ids, document_ids)
        formula = models.FormulaQuery(
            formula=models.SumExpression(sum=["$score[0]", "$score[1]"]),
            defaults={"$score[0]": 0.0, "$score[1]": 0.0},
        )

        def run(fetch: int) -> list[tuple[str, float]]:
            deep = fetch * PREFETCH_FACTOR
            response = self._client.query_points(
                self.collection,
                prefetch=[
                    models.Prefetch(query=vector, using=BM25_VECTOR, filter=query_filter, limit=deep),
                    models.Prefetch(query=vector, using=TF_VECTOR, filter=query_filter, limit=deep),
                ],
                query=formula,
                limit=fetch,
                with_payload=["passage_id"],
            )
            return [(hit.payload["passage_id"], float(hit.score)) for hit in response.points if hit.score > 0]

        return ranked_search(run, limit)

    def delete(self, passage_ids: Sequence[str]) -> None:
        """Remove passages' BM25 vectors (unknown ids are ignored; dense vectors stay).

        Raises:
            ValueError: If ``passage_ids`` is a str or holds a non-string.
        """
        check_ids("passage_ids", passage_ids)
        if not passage_ids:
            return
        with self._lock:
            drop_named_vectors(
                self._client, self.collection, [BM25_VECTOR, TF_VECTOR], [point_id(p) for p in sorted(set(passage_ids))]
            )

    def has(self, passage_ids: Sequence[str]) -> set[str]:
        """Which of the given passage ids have a BM25 vector.

        Raises:
            ValueError: If ``passage_ids`` is a str.
        """
        check_ids("passage_ids", passage_ids)
        by_point = {point_id(pid): pid for pid in set(passage_ids)}
        return {by_point[p] for p in holding(self._client, self.collection, BM25_VECTOR, list(by_point))}

    def count(self) -> int:
        """Number of passages with a BM25 vector."""
        return count_holding(self._client, self.collection, BM25_VECTOR)

    def clear(self) -> None:
        """Remove every BM25 vector (dense vectors and points stay)."""
        with self._lock:
            drop_named_vectors(self._client, self.collection, [BM25_VECTOR, TF_VECTOR])

    def close(self) -> None:
        """Close the client if this index opened it. Idempotent."""
        if self._owns_client and self._client is not None:
            self._client.close()
        self._owns_client = False

    def __enter__(self) -> SparseBM25Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
