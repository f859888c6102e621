"""LoCoMo turns as a BEIR-shaped retrieval set (the third set of the fusion study, issue 18).

Source: ``../shared/data/locomo/locomo10.json`` (Maharana et al., ACL 2024; CC BY-NC 4.0,
evaluation only). Written under ``bench/out/locomo-beir`` (gitignored), never into the repo:

- ``corpus.jsonl``: one document per dialogue turn of the 10 conversations (5,882 turns),
  ``_id`` = ``<sample_id>:<dia_id>``, ``title`` = the session's date and time, ``text`` =
  ``"<speaker>: <turn>"`` (plus ``[shares a photo: <caption>]`` when the turn shares one);
- ``queries.jsonl``: the questions of categories 1–4 (multi-hop, temporal, open-domain,
  single-hop; category 5 is adversarial, without evidence) with at least one evidence
  turn that exists;
- ``qrels/dev.tsv``: questions of conversations 1–5 (in file order), for tuning;
  ``qrels/test.tsv``: conversations 6–10, reported. Every evidence turn has grade 1.

All conversations share one corpus (no per-conversation filter): a question names its
speakers, and the other conversations are distractors.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.common import OUT, SHARED

DATA = SHARED / "locomo" / "locomo10.json"
ROOT = OUT / "locomo-beir"
CORPUS = ROOT / "corpus.jsonl"
QUERIES = ROOT / "queries.jsonl"
QRELS = {"dev": ROOT / "qrels" / "dev.tsv", "test": ROOT / "qrels" / "test.tsv"}
DEV_CONVERSATIONS = 5


def build(force: bool = False) -> Path:
    """Write the BEIR files (idempotent unless ``force``); returns their folder."""
    if CORPUS.exists() and QUERIES.exists() and all(p.exists() for p in QRELS.values()) and not force:
        return ROOT
    conversations = json.loads(DATA.read_text(encoding="utf-8"))
    (ROOT / "qrels").mkdir(parents=True, exist_ok=True)
    docs: list[dict] = []
    queries: list[dict] = []
    qrels: dict[str, list[tuple[str, str]]] = {"dev": [], "test": []}
    for n, conv in enumerate(conversations):
        sid = conv["sample_id"]
        c = conv["conversation"]
        turn_ids: set[str] = set()
        for key in sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
            date = c.get(f"{key}_date_time", "")
            for turn in c[key]:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                docs.append({"_id": f"{sid}:{turn['dia_id']}", "title": date, "text": text})
                turn_ids.add(turn["dia_id"])
        split = "dev" if n < DEV_CONVERSATIONS else "test"
        for i, qa in enumerate(conv["qa"]):
            if qa.get("category") == 5:
                continue
            evidence = sorted({e for raw in qa.get("evidence", []) for e in re.split(r"[;\s]+", raw) if e in turn_ids})
            if not evidence:
                continue
            qid = f"{sid}:q{i}"
            queries.append({"_id": qid, "text": qa["question"], "metadata": {"category": qa["category"]}})
            qrels[split].extend((qid, f"{sid}:{e}") for e in evidence)
    CORPUS.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    QUERIES.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries), encoding="utf-8")
    for split, rows in qrels.items():
        QRELS[split].write_text(
            "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in rows), encoding="utf-8"
        )
    return ROOT


if __name__ == "__main__":
    print(build(force=True))
