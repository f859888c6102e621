"""Pack entries and items: what the budget packs, and the items (with citations) it emits.

Split from :mod:`app.packs.service` (the pipeline). :func:`pack_entries` turns deduplicated
groups into packable entries in rank order (evidence, then whole documents) and
:func:`pack_evidence` packs them greedily into the budget the lead left (:class:`Packed`);
:func:`pack_item` turns a packed entry into a :class:`app.packs.types.PackItem`, citing its
source (:func:`citation_of`) and keeping only alternates from documents readable now.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cairn.app.packs.pipeline_types import Candidate, PackEntry, PackRun, PackServices
from cairn.app.packs.store import whole_documents
from cairn.app.packs.types import Citation, PackItem, PackRequest
from cairn.retrieval.dedup import DedupGroup
from cairn.retrieval.packing import pack_greedy


async def pack_entries(
    services: PackServices, req: PackRequest, groups: Sequence[DedupGroup[Candidate]]
) -> list[PackEntry]:
    """Packable entries in rank order: evidence groups (``PASSAGES``), then whole documents of
    the 20 best-ranked documents (``DOCUMENTS``)."""
    entries: list[PackEntry] = []
    if "PASSAGES" in req.sources:
        entries.extend(PackEntry("EVIDENCE", g, g.kept.tokens) for g in groups)
    if "DOCUMENTS" in req.sources:
        seen: set[str] = set()
        best_docs: list[DedupGroup[Candidate]] = []
        for g in groups:
            if g.kept.doc not in seen:
                seen.add(g.kept.doc)
                best_docs.append(g)
        entries.extend(await whole_documents(services, best_docs[:20]))
    return entries


@dataclass(frozen=True, slots=True)
class Packed:
    """What the budget took of the evidence (:func:`pack_evidence`).

    Attributes:
        entries: Every packable entry, in rank order.
        included: The entries that fit, in rank order.
        skipped: How many entries did not fit the budget (the footer's ``truncated``).
        top_left_out: The best entry did not fit (the pack's top evidence item is missing).
        over_max_items: How many entries came after the first ``maxItems`` that fit.
    """

    entries: list[PackEntry]
    included: list[PackEntry]
    skipped: int
    top_left_out: bool
    over_max_items: int = 0


async def pack_evidence(run: PackRun, groups: Sequence[DedupGroup[Candidate]]) -> Packed:
    """Greedy packing in rank order (:func:`retrieval.packing.pack_greedy`, measured cl100k token
    counts) of the entries of ``groups`` (:func:`pack_entries`) into ``run.evidence_tokens``,
    at most ``maxItems`` of them (context-set items and FACT items are not counted)."""
    entries = await pack_entries(run.services, run.req, groups)
    packed = pack_greedy(
        entries, tokens=lambda e: e.tokens, max_tokens=run.evidence_tokens, max_items=run.req.max_items
    )
    # PackEntry compares by identity: did *this* top entry fit
    top_left_out = bool(entries) and packed.included[:1] != entries[:1]
    return Packed(entries, packed.included, len(packed.skipped), top_left_out, len(packed.over_count))


def citation_of(
    c: Candidate,
    passage_id: str | None = None,
    start: int | None = None,
    end: int | None = None,
    sha: str | None = None,
    *,
    whole: bool = False,
) -> Citation:
    """A candidate's citation, naming its source (external id, title, collection id and name);
    ``whole``: the whole chosen version (no passage, ``start``/``end``/``sha`` given)."""
    return Citation(
        c.doc,
        c.version,
        None if whole else c.id,
        c.start if start is None else start,
        c.end if end is None else end,
        c.sha if sha is None else sha,
        external_id=c.external_id,
        document_title=c.title,
        collection_id=c.collection,
        collection_name=c.collection_name,
    )


def pack_item(rank: int, e: PackEntry, readable: set[str], flags: dict[str, set[str]]) -> PackItem:
    """One pack item from an entry; alternates only from documents readable now."""
    c = e.group.kept
    if e.whole is None:  # EVIDENCE
        text = c.text
        cit = citation_of(c)
        alts = tuple(citation_of(d) for d in e.group.duplicates if d.doc in readable)
        others = tuple(sorted(flags.get(c.id, ())))
    else:  # WHOLE_DOCUMENT
        text = e.whole.text
        cit = citation_of(c, None, 0, len(text), e.whole.sha256, whole=True)
        alts, others = (), ()
    return PackItem(
        rank,
        e.kind,
        text,
        e.tokens,
        "UNTRUSTED",
        round(c.score, 8),
        c.ranks.get("lexical"),
        c.ranks.get("dense"),
        cit,
        alts,
        c.title,
        c.collection,
        c.valid_from,
        c.valid_to,
        c.superseded,
        bool(others),
        others,
        external_id=c.external_id,
        collection_name=c.collection_name,
    )
