"""Pack items → framework metadata (``cairn_context_client.documents``): ``source`` is the
document's external id, the ``doc_…`` id beside it; an approved context-set entry (no
citation) maps without a document."""

from __future__ import annotations

from cairn_context_client import item_metadata, pack_input

PACK = {"packId": "pack_1", "replayId": "rep_1"}
CITED = {
    "rank": 1,
    "kind": "PASSAGE",
    "text": "Reciprocal rank fusion combines the rankings.",
    "externalId": "handbook/packs.md",
    "documentTitle": "Context packs",
    "collectionId": "col_1",
    "collectionName": "handbook",
    "score": 0.91,
    "citation": {
        "documentId": "doc_1",
        "versionId": "ver_1",
        "passageId": "psg_1",
        "start": 84,
        "end": 129,
        "sha256": "a" * 64,
    },
    "alternateCitations": [{"documentId": "doc_2", "passageId": "psg_9"}],
}


def test_source_is_the_external_id_and_the_document_id_is_kept_beside_it():
    m = item_metadata(CITED, PACK)
    assert (m["source"], m["document_id"], m["version_id"], m["passage_id"]) == (
        "handbook/packs.md",
        "doc_1",
        "ver_1",
        "psg_1",
    )
    assert (m["start"], m["end"], m["title"], m["collection_name"]) == (84, 129, "Context packs", "handbook")
    assert m["alternate_citations"] == [{"document_id": "doc_2", "passage_id": "psg_9"}]
    assert (m["pack_id"], m["replay_id"]) == ("pack_1", "rep_1")


def test_an_approved_entry_has_no_document():
    entry = {
        "rank": 1,
        "kind": "VERIFIED_ANSWER",
        "text": "The kitchen closes at 22:00.",
        "externalId": "",
        "documentTitle": "When does the kitchen close?",
        "collectionId": None,
        "collectionName": "",
        "citation": None,
        "alternateCitations": [],
    }
    m = item_metadata(entry)
    assert (m["source"], m["document_id"], m["start"], m["kind"]) == (None, None, None, "VERIFIED_ANSWER")
    assert m["title"] == "When does the kitchen close?" and "pack_id" not in m


def test_pack_input_sends_only_what_is_given():
    assert pack_input("q") == {"task": "q"}
    assert pack_input("q", max_tokens=512, document_ids=("doc_1",), retrieval="LEXICAL") == {
        "task": "q",
        "budget": {"maxTokens": 512},
        "filters": {"documentIds": ["doc_1"]},
        "retrieval": "LEXICAL",
    }
