"""Recall ranking for agent memories: three legs over one member's candidates, fused by RRF.

The candidates are at most 300 memories chosen in SQL by :mod:`app.memory.candidates`
(the caller's memories passing *owner member, workspace, namespace, collection, as-of* that
match the query by analysed word or are among the most cosine-similar; the newest 300 of
those), so every leg below only ever sees the caller's own memories: the owner filter is
inside every channel.

Legs (each returns ids best first; ties keep the candidate order, newest first):

* ``bm25``: Okapi BM25 (:mod:`retrieval.lexical.bm25`, Robertson & Zaragoza 2009) with
  :data:`MEMORY_BM25` — k1 = 1.2, b = 0.75, Lucene's non-negative idf
  ``ln(1 + (N − n + 0.5) / (n + 0.5))`` — computed in process over the candidates, with Cairn's analyzer (:func:`retrieval.analysis.analyze`: stop words, Porter2
  stemming, CJK bigrams). Why not the Whoosh index: the corpus is ≤ 300 short notes of one
  member; scoring them costs well under a millisecond-per-hundred, the statistics are the
  member's own (no cross-member idf leak), and forget/purge have no second store to clean
  (the per-memory term rows used to *select* candidates are deleted with the memory).
* ``vector``: cosine similarity of the query embedding and each memory's stored embedding
  (all-MiniLM-L6-v2, L2-normalised, so cosine = dot product). Memories without a vector
  (written with no embedder) are not in this leg.
* ``entity``: the entities mentioned by the memory's cited passages (SPEC §7), extracted
  deterministically (:func:`extract_entities`) from the passages' live text at recall time;
  a memory scores the number of distinct such entities that occur in the query (as a word
  n-gram, n ≤ 4, case-folded). Memories without citations, or scoring 0, are not in this
  leg. (Measured on LoCoMo: the same leg over the memory's *own* text entities is a crude,
  idf-less word match and cut fusion recall@10 from 0.42 to 0.27, so it is not used.)

Fusion: :func:`retrieval.fusion.rrf`, k = 60 (Cormack et al. 2009), leg weights
:data:`LEG_WEIGHTS`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from cairn.app.memory.pii import PLACEHOLDER_RE
from cairn.retrieval.analysis import analyze
from cairn.retrieval.fusion import Fused, rrf
from cairn.retrieval.lexical import IDF, BM25Params, idf, term_score

MEMORY_BM25 = BM25Params(k1=1.2, b=0.75, idf=IDF.LUCENE)
"""Lucene's defaults (k1 1.2, b 0.75) and its IDF, which stays positive over a few hundred
candidates where a term in most of them would get a negative classic (RSJ) IDF. Not tuned: the
LoCoMo figures of :data:`LEG_WEIGHTS` were measured with these."""
LEG_WEIGHTS: dict[str, float] = {"bm25": 1.5, "vector": 1.0, "entity": 0.5}
"""RRF leg weights. BM25 leads: on LoCoMo (``python -m bench.locomo``, all 1,535 questions of
categories 1–4) evidence recall@10 was 0.612 unweighted (1, 1) and 0.631 with (1.5, 1); BM25
alone 0.579, cosine alone 0.502. The weights were chosen on that same set (no held-out
split); the gain was the same on its first two conversations (0.619 → 0.639). The entity
leg only exists for memories with citations and weighs half. (Those figures ranked every
memory of a conversation; over the served candidates, :mod:`app.memory.candidates`,
the same weights give 0.646 vs (1, 1) 0.621.)"""

_WORD = re.compile(r"[^\W_][\w'’.-]*[^\W_]|[^\W_]", re.UNICODE)
_STOP_CAPS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "do",
        "did",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "just",
        "let",
        "me",
        "my",
        "no",
        "not",
        "of",
        "oh",
        "ok",
        "okay",
        "on",
        "or",
        "our",
        "she",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "too",
        "us",
        "was",
        "we",
        "well",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "yes",
        "yeah",
        "you",
        "your",
        "hey",
        "hi",
        "hello",
        "thanks",
        "thank",
        "wow",
        "sure",
        "also",
        "maybe",
        "really",
        "great",
        "good",
        "nice",
        "sounds",
    ]
)


def extract_entities(text: str) -> list[str]:
    """Deterministic entity extraction (no model): names, numbers and technical terms.

    Method: words are ``\\w`` runs (inner ``' ’ . -`` kept). An entity is (1) a run of
    consecutive capitalised words (``Title`` or ``ALLCAPS``), each word also on its own,
    minus capitalised function words (``The``, ``I``, ``What`` …); (2) any word holding a
    digit (years, amounts, ``v2``, ``ISO27001``), PII placeholders excluded; (3) a
    mixed-case term (``GraphQL``, ``iPhone``). Entities are case-folded; CJK text yields
    none (no segmenter).

    Returns:
        Sorted distinct entities.
    """
    text = PLACEHOLDER_RE.sub(" ", text)
    found: set[str] = set()
    run: list[str] = []

    def close() -> None:
        if len(run) > 1:
            found.add(" ".join(run).casefold())
        run.clear()

    for m in _WORD.finditer(text):
        word = m.group(0).strip(".-'’")
        if not word:
            close()
            continue
        between = text[m.start() - 1] if m.start() else " "
        if between not in " \t" or (run and text[m.start() - 2 : m.start() - 1] in {".", "!", "?", ","}):
            close()
        if any(ch.isdigit() for ch in word):
            close()
            found.add(word.casefold())
            continue
        if word[0].isupper() and word.casefold() not in _STOP_CAPS:
            run.append(word)
            found.add(word.casefold())
        else:
            if any(ch.isupper() for ch in word[1:]) and any(ch.islower() for ch in word):
                found.add(word.casefold())
            close()
    close()
    return sorted(found)


def query_ngrams(query: str, n: int = 4) -> set[str]:
    """Case-folded word n-grams (1 ≤ n ≤ 4) of the query, to meet entities."""
    words = [w.strip(".-'’").casefold() for w in _WORD.findall(query)]
    words = [w for w in words if w]
    grams = set()
    for size in range(1, n + 1):
        for i in range(len(words) - size + 1):
            grams.add(" ".join(words[i : i + size]))
    return grams


def bm25_scored(query: str, docs: Sequence[tuple[str, str]]) -> list[tuple[str, float]]:
    """Score ``docs`` (``(id, text)``, newest first) by Okapi BM25 (:data:`MEMORY_BM25`) against
    ``query``, with the statistics (N, document frequencies, mean length) of ``docs`` alone.

    Returns:
        ``(id, score)`` with a positive score, best first (ties: input order).
    """
    q_terms = set(analyze(query))
    if not q_terms or not docs:
        return []
    tfs = [Counter(analyze(text)) for _, text in docs]
    lengths = [sum(tf.values()) for tf in tfs]
    avg = (sum(lengths) / len(lengths)) or 1.0
    weights = {t: idf(n_docs=len(docs), df=sum(1 for tf in tfs if t in tf), variant=MEMORY_BM25.idf) for t in q_terms}
    scored = []
    for i, ((doc_id, _), tf, length) in enumerate(zip(docs, tfs, lengths)):
        score = 0.0
        for t in q_terms:
            f = tf.get(t, 0)
            if f:
                score += term_score(tf=f, length=length, avg_length=avg, idf=weights[t], params=MEMORY_BM25)
        if score > 0:
            scored.append((-score, i, doc_id))
    scored.sort()
    return [(doc_id, -negative) for negative, _, doc_id in scored]


def bm25_rank(query: str, docs: Sequence[tuple[str, str]]) -> list[str]:
    """The ids of :func:`bm25_scored`, best first (ties: input order)."""
    return [doc_id for doc_id, _ in bm25_scored(query, docs)]


def cosine_rank(query_vector: np.ndarray, vectors: Sequence[tuple[str, np.ndarray]]) -> list[str]:
    """Rank ``(id, unit vector)`` pairs by cosine with the unit ``query_vector`` (ties: input order)."""
    if not vectors:
        return []
    matrix = np.stack([v for _, v in vectors])
    sims = matrix @ query_vector.astype(np.float32)
    order = sorted(range(len(vectors)), key=lambda i: (-float(sims[i]), i))
    return [vectors[i][0] for i in order]


def entity_rank(query: str, entities: Sequence[tuple[str, set[str]]]) -> list[str]:
    """Rank ``(id, entity set)`` by the number of entities met in the query (> 0 only)."""
    grams = query_ngrams(query)
    scored = [(-len(ents & grams), i, mid) for i, (mid, ents) in enumerate(entities) if ents & grams]
    scored.sort()
    return [mid for _, _, mid in scored]


def fuse(legs: Mapping[str, Sequence[str]], weights: Mapping[str, float] | None = None) -> list[Fused]:
    """RRF (k = 60) of the legs with :data:`LEG_WEIGHTS` unless ``weights`` is given."""
    return rrf({k: list(v) for k, v in legs.items()}, weights=weights if weights is not None else LEG_WEIGHTS)


def pack_vector(vector: np.ndarray) -> bytes:
    """float32 little-endian bytes of a vector (the ``AgentMemory.embedding`` column)."""
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


def unpack_vector(blob: bytes) -> np.ndarray:
    """Inverse of :func:`pack_vector`."""
    return np.frombuffer(blob, dtype="<f4")
