"""LoCoMo evidence recall for agent-memory recall: ``python -m bench.locomo [--limit N]``.

Data: ``../shared/data/locomo/locomo10.json`` (Maharana et al., ACL 2024; CC BY-NC 4.0,
evaluation only, never copied into the repo). Each conversation's turns are stored as
memories of one member through :func:`app.memory.service.remember` (the code the
``rememberMemory`` resolver calls: PII masking, entity extraction, the real
all-MiniLM-L6-v2 embedding) in a throw-away SQLite database under a temp dir. Turns are
written in conversation order with synthetic system times 40 s apart (so the 120/hour
rate limit holds and "newest" means "latest in the conversation").

Questions of categories 1–4 (multi-hop, temporal, open-domain, single-hop; category 5 is
adversarial and has no answer) are asked with :func:`app.memory.service.recall`.
Metric: evidence recall@10 = |top-10 turns ∩ evidence turns| / |evidence turns|, averaged
over questions with at least one resolvable evidence id (ids split on ';' and spaces).

Reported in one run: the ``served`` line is exactly the ``recallMemories`` resolver's call
(:func:`app.memory.service.recall` with the query, ``limit`` 10, the embedder, every other
argument at its default: the newest 300 memories matching the query by word or by cosine,
:mod:`app.memory.candidates`). BM25 only, cosine only, entity only and other
leg weightings come from a second call over the same candidates (``limit`` 300, so every
candidate's leg ranks are returned); its default fusion must equal the served top 10
(checked and counted). ``--full`` adds the old reference: every memory of the
conversation is a candidate (no window).

Options: ``--limit N`` (first N conversations), ``--vector-candidates K`` (step 2's size,
default the served one), ``--full``, ``--format plain|speaker|speaker_date``
(memory text: the turn; "Speaker: turn"; "[date] Speaker: turn" plus image captions).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from bench.common import SHARED

DATA = SHARED / "locomo" / "locomo10.json"
WEIGHTINGS = {
    "rrf bm25+vector (1,1), unweighted": {"bm25": 1.0, "vector": 1.0},
    "rrf bm25+vector+entity (1,1,1)": {"bm25": 1.0, "vector": 1.0, "entity": 1.0},
    "rrf bm25+vector+entity (1,1.5,0.5)": {"bm25": 1.0, "vector": 1.5, "entity": 0.5},
    "rrf bm25+vector+entity (2,1,0.5)": {"bm25": 2.0, "vector": 1.0, "entity": 0.5},
    "rrf default LEG_WEIGHTS (1.5,1,0.5)": None,
}


def turn_text(turn: dict, date: str, fmt: str) -> str:
    """The memory text of one LoCoMo turn in the chosen format (≤ 1,000 characters)."""
    text = turn["text"]
    if fmt == "plain":
        return text[:1000]
    if turn.get("blip_caption"):
        text = f"{text} [shares a photo: {turn['blip_caption']}]"
    text = f"{turn['speaker']}: {text}"
    if fmt == "speaker_date":
        text = f"[{date}] {text}"
    return text[:1000]


def evidence_ids(raw: list) -> set[str]:
    """Split LoCoMo evidence strings on ';' and spaces (SOURCE.md lists the quirks)."""
    return {p for e in raw for p in re.split(r"[;\s]+", str(e)) if p}


async def run(limit: int | None, fmt: str, vector_candidates: int | None = None, full: bool = False) -> None:
    from cairn.app.core.db import Database
    from cairn.app.core.errors import CairnError
    from cairn.app.core.ids import utcnow
    from cairn.app.core.migrate import upgrade_database
    from cairn.app.governance.auth import ROLE_PERMISSIONS, Principal
    from cairn.app.identity import service as identity
    from cairn.app.memory import service as mem
    from cairn.app.memory.rank import LEG_WEIGHTS, fuse
    from cairn.retrieval.embeddings import load_embedder

    samples = json.loads(DATA.read_text(encoding="utf-8"))[:limit]
    tmp = Path(tempfile.mkdtemp(prefix="cairn-locomo-"))
    url = f"sqlite+aiosqlite:///{tmp / 'bench.db'}"
    await asyncio.to_thread(upgrade_database, url)
    db = Database(url)
    embedder = load_embedder("local")
    embedder.encode_query("warm up")
    scores: dict[str, list[float]] = {}
    skipped_vector = empty = mismatched = 0
    candidates: list[int] = []
    extra = {} if vector_candidates is None else {"vector_candidates": vector_candidates}
    store_s = recall_s = 0.0
    try:
        async with db.session() as s:
            ws = await identity.create_workspace(s, name="locomo-bench")
            ws.memory_enabled, ws.memory_retention_days = True, 365
            s.add(ws)
        for ci, sample in enumerate(samples):
            conv = sample["conversation"]
            async with db.session() as s:
                m, _ = await identity.create_member(s, workspace_id=ws.id, name=sample["sample_id"], role="editor")
            who = Principal(
                kind="agent",
                id=f"{ci:016x}",
                workspace_id=ws.id,
                permissions=ROLE_PERMISSIONS["editor"],
                member_id=m.id,
                role="editor",
                scopes=frozenset({"memory:read", "memory:write"}),
            )
            start = utcnow() - timedelta(days=30)
            by_memory: dict[str, str] = {}
            n = 0
            t0 = time.perf_counter()
            sessions = sorted(
                (int(k.split("_")[1]), k) for k, v in conv.items() if k.startswith("session_") and isinstance(v, list)
            )
            for _, key in sessions:
                date = conv.get(f"{key}_date_time", "")
                for turn in conv[key]:
                    try:
                        async with db.session() as s:
                            out = await mem.remember(
                                s,
                                principal=who,
                                namespace="locomo",
                                text=turn_text(turn, date, fmt),
                                embedder=embedder,
                                now=start + timedelta(seconds=40 * n),
                            )
                        by_memory[out.memory.row.id] = turn["dia_id"]
                    except CairnError as exc:
                        if exc.code != "AGENT_MEMORY_EMPTY":
                            raise
                        empty += 1
                    n += 1
            store_s += time.perf_counter() - t0
            known = set(by_memory.values())
            t0 = time.perf_counter()
            for qa in sample["qa"]:
                if qa.get("category") not in (1, 2, 3, 4):
                    continue
                gold = evidence_ids(qa.get("evidence", [])) & known
                if not gold:
                    continue
                async with db.session() as s:
                    # exactly the resolver's call (resolvers/memory.py recall_memories)
                    served = await mem.recall(
                        s,
                        principal=who,
                        query=qa["question"],
                        namespace=None,
                        collection_id=None,
                        as_of=None,
                        limit=10,
                        embedder=embedder,
                        **extra,
                    )
                    window = await mem.recall(
                        s, principal=who, query=qa["question"], limit=mem.RECALL_CANDIDATES, embedder=embedder, **extra
                    )
                    lifted = (
                        (
                            await mem.recall(
                                s,
                                principal=who,
                                query=qa["question"],
                                limit=10,
                                embedder=embedder,
                                candidate_limit=10_000,
                                vector_candidates=10_000,
                            )
                        )
                        if full
                        else None
                    )
                if any(lg.status != "USED" for lg in window.legs):
                    skipped_vector += 1
                candidates.append(window.candidates)
                if [v.row.id for v, _, _ in window.items[:10]] != [v.row.id for v, _, _ in served.items]:
                    mismatched += 1
                legs: dict[str, list[str]] = {}
                for v, _, ranks in window.items:
                    for leg, r in ranks.items():
                        legs.setdefault(leg, []).append((r, v.row.id))
                legs = {leg: [i for _, i in sorted(pairs)] for leg, pairs in legs.items()}

                def recall10(ids: list[str]) -> float:
                    return len({by_memory[i] for i in ids[:10]} & gold) / len(gold)

                scores.setdefault("served: recallMemories (default fusion)", []).append(
                    recall10([v.row.id for v, _, _ in served.items])
                )
                for leg in ("bm25", "vector", "entity"):
                    scores.setdefault(f"{leg} only (same candidates)", []).append(recall10(legs.get(leg, [])))
                for name, w in WEIGHTINGS.items():
                    use = {k: v for k, v in legs.items() if w is None or k in w}
                    fused = fuse(use, w if w is not None else LEG_WEIGHTS)
                    scores.setdefault(name, []).append(recall10([f.id for f in fused]))
                if lifted is not None:
                    scores.setdefault("reference: every memory a candidate (no window)", []).append(
                        recall10([v.row.id for v, _, _ in lifted.items])
                    )
            recall_s += time.perf_counter() - t0
            print(
                f"  {sample['sample_id']}: {n} turns stored, "
                f"{len(scores['bm25 only (same candidates)'])} questions so far",
                flush=True,
            )
    finally:
        await db.dispose()
        shutil.rmtree(tmp, ignore_errors=True)
    n_q = len(scores.get("bm25 only (same candidates)", []))
    print(
        f"\nLoCoMo evidence recall@10, {len(samples)} conversations, {n_q} questions (categories 1-4), "
        f"memory text format '{fmt}', vector candidates "
        f"{vector_candidates if vector_candidates is not None else mem.VECTOR_CANDIDATES}"
    )
    for name, values in scores.items():
        print(f"  {name:<48} {statistics.fmean(values):.3f}")
    print(
        f"store: {store_s:.0f} s; recall: "
        f"{recall_s:.0f} s for {n_q} questions x {3 if full else 2} recalls; vector leg skipped on "
        f"{skipped_vector} questions; {empty} turns refused as AGENT_MEMORY_EMPTY"
    )
    if candidates:
        print(
            f"candidates per recall: mean {statistics.fmean(candidates):.0f}, max {max(candidates)}; "
            f"served top 10 != second call's top 10 on {mismatched} questions"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--limit", type=int, default=None, help="first N conversations (default: all 10)")
    parser.add_argument(
        "--vector-candidates",
        type=int,
        default=None,
        help="cosine candidates joining the word matches (default: the served value)",
    )
    parser.add_argument("--full", action="store_true", help="also rank with every memory a candidate")
    parser.add_argument("--format", choices=("plain", "speaker", "speaker_date"), default="speaker_date")
    args = parser.parse_args()
    if not DATA.exists():
        raise SystemExit(f"needs {DATA}")
    asyncio.run(run(args.limit, args.format, args.vector_candidates, args.full))


if __name__ == "__main__":
    main()
