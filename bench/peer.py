"""The peer: LangChain's EnsembleRetriever over the same passages and the same embeddings.

What a user would build instead of Cairn (LangChain's documented hybrid recipe):
``EnsembleRetriever([BM25Retriever, FAISS.as_retriever()], weights=[0.5, 0.5], c=60)`` —
weighted RRF (Cormack et al. 2009) with c = 60 over rank_bm25's Okapi BM25 and a FAISS flat
index. Both legs return ``k`` passages (100 by default, so recall@100 is measurable).

Fairness, so the comparison isolates retrieval quality and speed:
- the peer indexes Cairn's own passages (same chunking, ``title\\ntext`` like Cairn's encoder
  input), read from Cairn's SQL store;
- its FAISS index holds *the very vectors Cairn stored* (read back from Cairn's Qdrant index,
  no second encoding), and its queries are embedded by the same model instance (the model of
  the passages' vector space: all-MiniLM-L6-v2, or multilingual-e5-small for CJK corpora);
- documents are ranked by first appearance of their passages, exactly as for Cairn.

Two BM25 tokenizations are run: LangChain's default (``str.split``, what the recipe gives
you) and a tuned one (lowercased ``\\w+`` words; CJK text as character bigrams, as Cairn does)
so the peer is not judged only by its weakest default.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

_WORD = re.compile(r"\w+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def tuned_tokens(text: str) -> list[str]:
    """Lowercased ``\\w+`` words; runs containing CJK become overlapping character bigrams."""
    out: list[str] = []
    for word in _WORD.findall(text.lower()):
        if _CJK.search(word) and len(word) > 1:
            out.extend(word[i : i + 2] for i in range(len(word) - 1))
        else:
            out.append(word)
    return out


@dataclass
class PeerPassage:
    """One passage as the peer sees it."""

    passage_id: str
    document: str
    text: str
    vector: object  # numpy array (384,)


class Peer:
    """LangChain EnsembleRetriever (BM25Retriever + FAISS, RRF c = 60) over given passages.

    Args:
        passages: The corpus (text + stored vector + external document id).
        embedder: Cairn's embedder (its ``encode_query`` embeds peer queries too).
        k: Passages each leg returns.
        tokenizer: ``"default"`` (``str.split``) or ``"tuned"`` (:func:`tuned_tokens`).
    """

    def __init__(self, passages: list[PeerPassage], embedder, *, k: int = 100, tokenizer: str = "default") -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # langchain-community announces its own sunset
            from langchain_classic.retrievers import EnsembleRetriever
            from langchain_community.retrievers import BM25Retriever
            from langchain_community.vectorstores import FAISS
            from langchain_core.embeddings import Embeddings

        class MiniLM(Embeddings):
            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return embedder.encode(texts).tolist()

            def embed_query(self, text: str) -> list[float]:
                return embedder.encode_query(text).tolist()

        t = time.perf_counter()
        texts = [p.text for p in passages]
        metas = [{"doc": p.document, "pid": p.passage_id} for p in passages]
        kw: dict = {}
        if tokenizer == "tuned":
            kw["preprocess_func"] = tuned_tokens
        self.bm25 = BM25Retriever.from_texts(texts, metadatas=metas, **kw)
        self.bm25.k = k
        self.faiss = FAISS.from_embeddings([(p.text, p.vector.tolist()) for p in passages], MiniLM(), metadatas=metas)
        self.dense = self.faiss.as_retriever(search_kwargs={"k": k})
        self.ensemble = EnsembleRetriever(retrievers=[self.bm25, self.dense], weights=[0.5, 0.5], c=60)
        self.build_s = time.perf_counter() - t

    def ranked_documents(self, query: str, leg: str = "ensemble") -> list[str]:
        """External document ids by first appearance in the chosen leg's passage ranking."""
        retriever = {"ensemble": self.ensemble, "bm25": self.bm25, "dense": self.dense}[leg]
        seen: dict[str, None] = {}
        for doc in retriever.invoke(query):
            seen.setdefault(doc.metadata["doc"], None)
        return list(seen)


async def load_passages(
    services, workspace_id: str, progress: Callable[[int, int], None] | None = None
) -> list[PeerPassage]:
    """Cairn's passages of a workspace with their stored vectors and external document ids.

    Raises:
        RuntimeError: a passage has no stored vector (ingest did not finish embedding).
    """
    from sqlalchemy import select

    from cairn.app.core.models import Document, Passage

    async with services.db.session() as s:
        rows = (
            await s.execute(
                select(Passage.id, Document.external_id, Document.title, Passage.text)
                .join(Document, Document.id == Passage.document_id)
                .where(Passage.workspace_id == workspace_id, Document.deleted_at.is_(None))
                .order_by(Passage.id)
            )
        ).all()
    idx = services.indexes
    out: list[PeerPassage] = []
    for start in range(0, len(rows), 1000):
        chunk = rows[start : start + 1000]
        vectors = idx.vectors.vectors([r[0] for r in chunk])
        for pid, ext, title, text in chunk:
            if pid not in vectors:
                raise RuntimeError(f"passage {pid} has no stored vector: run the ingest to the end first")
            out.append(PeerPassage(pid, ext, idx.embedding_input(title or "", text), vectors[pid]))
        if progress:
            progress(len(out), len(rows))
    return out
