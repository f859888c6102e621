"""Compact binary form of a replay record: the pack's conditions and its items' ids and hashes.

A replay record keeps no text (SPEC §3). The JSON form it replaced cost ~260 bytes per item
(key names, hex hashes, ids repeated per item); this form stores, per item, a kind byte,
indexes into a table of distinct ids, the span as varints and the SHA-256 as 32 raw bytes.
Ids of the usual shape ``<prefix>_<24 hex>`` take 1 + 12 bytes in the table (the prefix is
itself a table entry). Measured with ``python -m bench.replay_size``.

Layout (version 1)::

    b"R1" | varint len + conditions JSON (sorted keys, UTF-8)
          | varint n_prefixes | n × (varint len + ASCII prefix)
          | varint n_ids | n × id          id = 0x00 varint prefix_index 12 bytes
                                               | 0x01 varint len UTF-8 (any other id)
          | varint n_items | n × item      item = kind byte | varint document | varint version
                                                  | varint passage+1 (0: none) | varint start
                                                  | varint end-start | 32 bytes SHA-256

The whole is stored zlib-compressed when that is smaller (first byte ``b"Z"``).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cairn.app.packs.types import PackHeader, PackRequest, fusion_method

# appended only: a stored record keeps the index (context-set kinds came after FACT)
KINDS = ("EVIDENCE", "WHOLE_DOCUMENT", "FACT", "VERIFIED_ANSWER", "DEFINITION", "INSTRUCTION", "REQUIRED_EVIDENCE")
_ID_RE = re.compile(r"^([a-z]{1,16})_([0-9a-f]{24})$")


@dataclass(frozen=True)
class RecordedItem:
    """One recorded pack item: what VERIFY re-checks and RECOMPUTE diffs (no text)."""

    rank: int
    kind: str
    document_id: str
    version_id: str
    passage_id: str | None
    start: int
    end: int
    sha256: str


def replay_conditions(header: PackHeader, req: PackRequest) -> dict[str, Any]:
    """The conditions RECOMPUTE rebuilds a pack under (a :class:`PackHeader` and its request).

    ``maxItems`` and ``minRelativeScore`` are recorded only when the request set them, so a
    record without them (every record made before they existed) means "not set"."""
    cut = {
        k: v for k, v in (("maxItems", req.max_items), ("minRelativeScore", req.min_relative_score)) if v is not None
    }
    return {
        **cut,
        "validTime": header.valid_time.isoformat(),
        "systemTime": header.system_time.isoformat(),
        "maxTokens": req.max_tokens,
        "maxLatencyMs": req.max_latency_ms,
        "coverage": req.coverage,
        "retrieval": req.retrieval,
        "collectionIds": list(req.collection_ids or []),
        "documentIds": list(req.document_ids or []),
        "sources": list(req.sources),
        "contextSetId": req.context_set_id,
        "fusion": fusion_method(req),
    }


def _varint(n: int, out: bytearray) -> None:
    if n < 0:
        raise ValueError("varints are unsigned")
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def varint(self) -> int:
        shift = n = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7

    def take(self, k: int) -> bytes:
        chunk = self.data[self.pos : self.pos + k]
        if len(chunk) != k:
            raise ValueError("truncated replay record")
        self.pos += k
        return chunk


def encode_record(conditions: dict[str, Any], items: Iterable[RecordedItem]) -> bytes:
    """Encode conditions and items (see module doc). Ranks are implied by order (from 1)."""
    items = list(items)
    ids: dict[str, int] = {}
    prefixes: dict[str, int] = {}
    for it in items:
        for value in (it.document_id, it.version_id, it.passage_id):
            if value is not None and value not in ids:
                ids[value] = len(ids)
                m = _ID_RE.match(value)
                if m and m.group(1) not in prefixes:
                    prefixes[m.group(1)] = len(prefixes)
    out = bytearray(b"R1")
    cond = json.dumps(conditions, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    _varint(len(cond), out)
    out += cond
    _varint(len(prefixes), out)
    for p in prefixes:
        _varint(len(p), out)
        out += p.encode("ascii")
    _varint(len(ids), out)
    for value in ids:
        m = _ID_RE.match(value)
        if m:
            out.append(0)
            _varint(prefixes[m.group(1)], out)
            out += bytes.fromhex(m.group(2))
        else:
            raw = value.encode()
            out.append(1)
            _varint(len(raw), out)
            out += raw
    _varint(len(items), out)
    for it in items:
        out.append(KINDS.index(it.kind))
        _varint(ids[it.document_id], out)
        _varint(ids[it.version_id], out)
        _varint(0 if it.passage_id is None else ids[it.passage_id] + 1, out)
        _varint(it.start, out)
        _varint(it.end - it.start, out)
        out += bytes.fromhex(it.sha256)
    packed = zlib.compress(bytes(out), 9)
    return b"Z" + packed if len(packed) + 1 < len(out) else bytes(out)


def decode_record(data: bytes) -> tuple[dict[str, Any], list[RecordedItem]]:
    """Inverse of :func:`encode_record`.

    Raises:
        ValueError: not a replay record of a known version.
    """
    if data[:1] == b"Z":
        data = zlib.decompress(data[1:])
    if data[:2] != b"R1":
        raise ValueError("unknown replay record format")
    r = _Reader(data)
    r.pos = 2
    conditions = json.loads(r.take(r.varint()).decode())
    prefixes = [r.take(r.varint()).decode("ascii") for _ in range(r.varint())]
    ids: list[str] = []
    for _ in range(r.varint()):
        tag = r.take(1)[0]
        if tag == 0:
            p = prefixes[r.varint()]
            ids.append(f"{p}_{r.take(12).hex()}")
        else:
            ids.append(r.take(r.varint()).decode())
    items: list[RecordedItem] = []
    for rank in range(1, r.varint() + 1):
        kind = KINDS[r.take(1)[0]]
        doc, ver, psg = r.varint(), r.varint(), r.varint()
        start = r.varint()
        end = start + r.varint()
        sha = r.take(32).hex()
        items.append(RecordedItem(rank, kind, ids[doc], ids[ver], ids[psg - 1] if psg else None, start, end, sha))
    return conditions, items


def legacy_items(rows: list[dict[str, Any]]) -> list[RecordedItem]:
    """Items of a record written before the compact form (JSON ``items`` column)."""
    return [
        RecordedItem(
            int(r["rank"]),
            str(r["kind"]),
            str(r["documentId"]),
            str(r["versionId"]),
            r.get("passageId"),
            int(r["start"]),
            int(r["end"]),
            str(r["sha256"]),
        )
        for r in rows
    ]
