"""The compact replay record: a lossless round trip, any id shape, no text."""

from __future__ import annotations

import pytest

from cairn.app.packs import RecordedItem, decode_record, encode_record

SHA = "ab" * 32


def test_round_trip_keeps_every_field_and_order():
    items = [
        RecordedItem(1, "EVIDENCE", "doc_" + "1" * 24, "ver_" + "2" * 24, "psg_" + "3" * 24, 0, 120, SHA),
        RecordedItem(2, "FACT", "doc_" + "1" * 24, "ver_" + "2" * 24, "psg_" + "3" * 24, 10, 60, "cd" * 32),
        RecordedItem(3, "WHOLE_DOCUMENT", "custom-id", "ver_" + "2" * 24, None, 0, 4000, "ef" * 32),
    ]
    cond = {"validTime": "2024-01-01T00:00:00+00:00", "sources": ["PASSAGES", "GRAPH"], "contextSetId": None}
    blob = encode_record(cond, items)
    assert decode_record(blob) == (cond, items)
    assert len(blob) < 3 * 80 + 120


def test_unknown_format_is_refused():
    with pytest.raises(ValueError):
        decode_record(b"XX")
