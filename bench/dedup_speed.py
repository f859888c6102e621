"""Near-duplicate dedup time per pack, on real pack candidates; optionally against an older revision.

Usage: ``.venv/bin/python -m bench.dedup_speed [--queries N] [--rev GIT_REV]``

Candidates per pack, as :func:`app.packs.resolve.resolve_windows` sees them:
SciFact and JSQuAD queries against the bench data dirs of ``bench.beir`` (``bench/out/
scifact-docs1200`` from ``--corpus-docs 1200``, ``bench/out/jsquad``; built by running
``bench.beir`` first), BM25 and dense top 100 fused by RRF, passage texts read from the
store; and Kleister-NDA contracts chunked at 200 tokens (multi-line legal text, shuffled
into packs of 200: the heaviest case for the line rule). Each pack is deduplicated the way
the pipeline does at the default budget — the first 80 candidates, then the first 160,
then all — and the three calls are timed together, with the shingle caches cleared before
each pack (cold: no prefetch); each pack's time is the least of 5 runs, the revisions
taking turns (the machine is shared, so single runs are noisy). ``--rev`` also times ``retrieval/dedup.py`` as of that git
revision on the same candidates.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import subprocess
import sys
import time
import types

from bench.beir import OUT, open_services, selected_queries
from bench.common import percentiles
from bench.dedup_quality import chunked, nda_texts


def _revision_module(rev: str, name: str, *, required: bool = True) -> types.ModuleType | None:
    """``retrieval/{name}.py`` as of git revision ``rev``, as a separate module (None if absent
    and not ``required``)."""
    shown = subprocess.run(
        ["git", "show", f"{rev}:retrieval/{name}.py"], check=required, capture_output=True, text=True
    )
    if shown.returncode != 0:
        return None
    module = types.ModuleType(f"{name}_{rev}")
    sys.modules[module.__name__] = module
    exec(compile(shown.stdout, f"{rev}:retrieval/{name}.py", "exec"), module.__dict__)
    return module


def load_revision(rev: str) -> types.ModuleType:
    """``retrieval/dedup.py`` as of git revision ``rev``, as a separate module; at a revision that
    has ``retrieval/dedup_shingles.py`` (shingling and its caches), that file's version at ``rev``
    is what it imports, not the working tree's."""
    shingles = _revision_module(rev, "dedup_shingles", required=False)
    saved = sys.modules.get("cairn.retrieval.dedup_shingles")
    if shingles is not None:
        sys.modules["cairn.retrieval.dedup_shingles"] = shingles
    try:
        module = _revision_module(rev, "dedup")
    finally:
        if saved is not None:
            sys.modules["cairn.retrieval.dedup_shingles"] = saved
        else:
            sys.modules.pop("cairn.retrieval.dedup_shingles", None)
    assert module is not None
    return module


async def pack_candidates(data_dir, dataset: str, queries: int) -> list[list[tuple[str, str, str]]]:
    """``(passage id, text, sha256)`` lists in fused rank order, one per query."""
    from sqlalchemy import select

    from cairn.app.core.models import Passage
    from cairn.retrieval.fusion import rrf

    services, principal, close = await open_services(data_dir)
    try:
        texts, _, qids = selected_queries(dataset, queries)
        idx, out = services.indexes, []
        for qid in qids:
            task = texts[qid]
            legs = {
                "lexical": [p for p, _ in idx.lexical.search(task, workspace_id=principal.workspace_id, limit=100)],
                "dense": [
                    p
                    for p, _ in idx.vectors.search(
                        idx.embedder.encode_query(task), workspace_id=principal.workspace_id, limit=100
                    )
                ],
            }
            ids = [f.id for f in rrf(legs)][:200]
            async with services.db.session() as s:
                rows = {
                    r[0]: r
                    for r in (
                        await s.execute(select(Passage.id, Passage.text, Passage.sha256).where(Passage.id.in_(ids)))
                    ).all()
                }
            out.append([tuple(rows[i]) for i in ids if i in rows])
        return out
    finally:
        await close()


def nda_packs(packs: int, seed: int = 1) -> list[list[tuple[str, str, str]]]:
    """Packs of 200 shuffled Kleister-NDA passages."""
    import hashlib

    passages = [
        (f"{doc}#{n}", text, hashlib.sha256(text.encode()).hexdigest())
        for n, (doc, text) in enumerate(chunked(nda_texts()))
    ]
    random.Random(seed).shuffle(passages)
    return [passages[i * 200 : (i + 1) * 200] for i in range(min(packs, len(passages) // 200))]


def _clear(module) -> None:
    for cache in ("shingle_keys", "line_keys", "_profile"):
        if hasattr(getattr(module, cache, None), "cache_clear"):
            getattr(module, cache).cache_clear()


def time_packs(modules: dict, packs, repeat: int = 5) -> dict[str, tuple[list[float], int]]:
    """Per module: per-pack ms of the three window calls (cold caches) and the duplicates
    merged in all packs. Modules take turns on each pack, and a pack's time is the least of
    ``repeat`` runs: the machine is shared, so single runs are noisy."""
    out: dict[str, tuple[list[float], int]] = {name: ([], 0) for name in modules}
    for cands in packs:
        best = dict.fromkeys(modules, float("inf"))
        merged = {}
        for _ in range(repeat):
            for name, module in modules.items():
                _clear(module)
                t = time.perf_counter()
                for window in (80, 160, len(cands)):
                    groups = module.dedup(
                        cands[:window], key=lambda c: c[0], text=lambda c: c[1], sha256=lambda c: c[2]
                    )
                best[name] = min(best[name], (time.perf_counter() - t) * 1000)
                merged[name] = sum(len(g.duplicates) for g in groups)
        for name in modules:
            times, total = out[name]
            times.append(best[name])
            out[name] = (times, total + merged[name])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--queries", type=int, default=100, help="packs per data set")
    ap.add_argument("--rev", default=None, help="also time retrieval/dedup.py at this git revision")
    args = ap.parse_args()
    import cairn.retrieval.dedup as current

    sets = {
        "SciFact": asyncio.run(pack_candidates(OUT / "scifact-docs1200", "scifact", args.queries)),
        "JSQuAD": asyncio.run(pack_candidates(OUT / "jsquad", "jsquad", args.queries)),
        "Kleister-NDA": nda_packs(args.queries),
    }
    modules = {"current": current}
    if args.rev:
        modules[args.rev] = load_revision(args.rev)
    print(
        f"{'data':<14} {'dedup':<10} {'packs':>6} {'cands':>6} {'mean ms':>8} {'p50 ms':>8} {'p95 ms':>8} {'merged':>7}"
    )
    for name, packs in sets.items():
        cands = sum(len(p) for p in packs) / max(1, len(packs))
        for label, (times, merged) in time_packs(modules, packs).items():
            pct = percentiles(times)
            print(
                f"{name:<14} {label:<10} {len(packs):>6} {cands:>6.0f} {pct['mean']:>8.2f} {pct['p50']:>8.2f} "
                f"{pct['p95']:>8.2f} {merged:>7}"
            )


if __name__ == "__main__":
    main()
