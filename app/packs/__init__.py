"""Context packs: hybrid retrieval legs, fusion, as-of resolution, dedup and budget packing; the
NDJSON/JSON wire form of pack events.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from cairn.app.packs.replay_codec import RecordedItem, decode_record, encode_record, legacy_items
from cairn.app.packs.row_cache import PassageRowCache
from cairn.app.packs.serialize import (
    camel,
    citation_fields,
    context_set_entry_fields,
    event_json,
    footer_fields,
    header_fields,
    item_fields,
    parse_body,
    request_from_json,
)
from cairn.app.packs.service import build_pack, stream_pack
from cairn.app.packs.store import recorded_item
from cairn.app.packs.types import (
    DEFAULT_LATENCY_MS,
    DEFAULT_TOKENS,
    INCOMPLETE_REASONS,
    Citation,
    Coverage,
    Pack,
    PackFooter,
    PackHeader,
    PackItem,
    PackItemKind,
    PackRequest,
    PackSource,
    RetrievalMode,
    TimePrecision,
    Trust,
    validate_pack_request,
)

__all__ = [
    "DEFAULT_LATENCY_MS",
    "DEFAULT_TOKENS",
    "INCOMPLETE_REASONS",
    "Citation",
    "Coverage",
    "Pack",
    "PackFooter",
    "PackHeader",
    "PackItem",
    "PackItemKind",
    "PackRequest",
    "PackSource",
    "PassageRowCache",
    "RecordedItem",
    "RetrievalMode",
    "TimePrecision",
    "Trust",
    "build_pack",
    "camel",
    "citation_fields",
    "context_set_entry_fields",
    "decode_record",
    "encode_record",
    "event_json",
    "footer_fields",
    "header_fields",
    "item_fields",
    "legacy_items",
    "parse_body",
    "recorded_item",
    "request_from_json",
    "stream_pack",
    "validate_pack_request",
]
