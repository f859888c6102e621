"""Scripts other than Latin and CJK (issue 18): BM25 keeps combining marks inside words and
bigrams Thai; the dense leg routes every non-Latin script, and Latin-script passages in other
languages than English, to multilingual-e5-small; and data
dirs, cluster collections and memories made by the earlier analyzer / routing are migrated."""

from __future__ import annotations

import json
import sqlite3

from cairn.app.context import bootstrap
from cairn.app.core.config import Settings
from cairn.app.core.migrate import upgrade_database
from cairn.app.corpus.indexing import SearchIndexes
from cairn.app.memory.candidates import memory_terms
from cairn.app.packs.service import build_pack
from cairn.app.packs.types import PackRequest
from cairn.retrieval.analysis import ANALYZER_VERSION
from cairn.retrieval.dense import DenseModels
from cairn.retrieval.lexical.directory import ANALYZER_FILE
from tests.db.dense_routing import (
    catch_up_after_migration,
    cluster_indexes,
    ingested_workspace,
    local_indexes,
    replace_shard,
    viewer,
)

# three paragraphs per script on near topics (two rivers, two instruments, ...), one question each
PARAGRAPHS = {
    "hi-ganga": "गंगा नदी हिमालय के गंगोत्री हिमनद से निकलती है और बंगाल की खाड़ी में गिरती है।",
    "hi-sitar": "सितार एक तार वाला वाद्य यंत्र है जिसे रवि शंकर ने दुनिया भर में लोकप्रिय बनाया।",
    "hi-tabla": "तबला दो छोटे ढोलों की जोड़ी है जिसे हाथों की उंगलियों से बजाया जाता है।",
    "ru-volga": "Волга — самая длинная река Европы, она впадает в Каспийское море.",
    "ru-baikal": "Байкал — самое глубокое озеро на планете, его глубина превышает полтора километра.",
    "ru-chess": "Шахматы пришли в Россию из Персии, и первые турниры прошли в девятнадцатом веке.",
    "th-rice": "ข้าวเหนียวมะม่วงเป็นขนมหวานที่คนไทยนิยมกินในฤดูร้อน",
    "th-boxing": "มวยไทยเป็นศิลปะการต่อสู้ที่ใช้หมัด เท้า เข่า และศอก",
    "th-river": "แม่น้ำเจ้าพระยาไหลผ่านกรุงเทพมหานครก่อนลงสู่อ่าวไทย",
    # Latin script, other languages: identified as such, embedded by the multilingual model
    "fr-danube": "Le Danube prend sa source dans la Forêt-Noire en Allemagne et se jette dans la mer Noire.",
    "fr-loire": "La Loire est le plus long fleuve de France ; ses châteaux attirent des millions de visiteurs.",
    "tr-volleyball": "Voleybol 1895 yılında William Morgan tarafından Amerika'da icat edildi ve altı oyuncuyla oynanır.",
}
QUESTIONS = {
    "hi-ganga": "गंगा नदी कहाँ से निकलती है?",
    "hi-sitar": "सितार को किसने लोकप्रिय बनाया?",
    "ru-baikal": "Какое озеро самое глубокое?",
    "ru-volga": "Куда впадает Волга?",
    "th-boxing": "มวยไทยใช้อะไรต่อสู้",
    "th-river": "แม่น้ำอะไรไหลผ่านกรุงเทพ",
    "fr-danube": "Où le Danube se jette-t-il ?",
    "tr-volleyball": "Voleybolu kim icat etti?",
}


async def _workspace(db, indexes: SearchIndexes) -> tuple[str, dict[str, str]]:
    return await ingested_workspace(db, indexes, PARAGRAPHS)


async def _first(services, ws: str, task: str, mode: str, ext: dict[str, str]) -> str | None:
    pack = await build_pack(services, viewer(ws), PackRequest(task=task, retrieval=mode, max_tokens=400))
    return ext[pack.items[0].citation.document_id] if pack.items else None


async def test_each_script_is_found_by_both_legs_and_embedded_by_the_multilingual_model(
    db, db_url, tmp_path, embedder, multilingual_embedder
):
    indexes = local_indexes(tmp_path, embedder, multilingual_embedder)
    try:
        ws, ext = await _workspace(db, indexes)
        # no passage of this workspace is in the English model's space (routing version 1 put
        # Hindi, Russian, Thai, French and Turkish there)
        assert indexes.vectors.has_space(multilingual_embedder.space, workspace_id=ws)
        assert not indexes.vectors.has_space("minilm", workspace_id=ws)
        services = bootstrap(Settings(data_dir=tmp_path, database_url=db_url), db=db, indexes=indexes)
        for key, task in QUESTIONS.items():
            for mode in ("LEXICAL", "DENSE", "HYBRID"):
                assert await _first(services, ws, task, mode, ext) == key, (key, mode)
    finally:
        indexes.close()


async def test_a_bm25_index_of_the_earlier_analyzer_is_re_created_and_re_filled(
    db, db_url, tmp_path, embedder, multilingual_embedder, caplog
):
    indexes = local_indexes(tmp_path, embedder, multilingual_embedder)
    try:
        ws, ext = await _workspace(db, indexes)
        held = indexes.lexical.count()
        assert json.loads((tmp_path / "whoosh" / ANALYZER_FILE).read_text()) == {"analyzerVersion": ANALYZER_VERSION}
    finally:
        indexes.close()
    (tmp_path / "whoosh" / ANALYZER_FILE).unlink()  # as version 1 left it: no version file

    indexes = local_indexes(tmp_path, embedder, multilingual_embedder)
    try:
        message = indexes.migration_message()
        assert message is not None and f"{held} passages analysed by analyzer version 1" in message
        assert indexes.lexical.count() == 0
        lex, vec = await catch_up_after_migration(indexes, db, caplog)
        # the log followed again from its start: the lexical leg re-filled, the vector leg
        # skipped every passage it holds (nothing re-embedded); the message logged once
        assert lex == held == indexes.lexical.count() and vec == 0
        services = bootstrap(Settings(data_dir=tmp_path, database_url=db_url), db=db, indexes=indexes)
        assert await _first(services, ws, QUESTIONS["hi-sitar"], "LEXICAL", ext) == "hi-sitar"
    finally:
        indexes.close()
    indexes = local_indexes(tmp_path, embedder, multilingual_embedder)
    try:
        assert indexes.migration_message() is None and indexes.lexical.count() == held
    finally:
        indexes.close()


async def test_a_vector_store_of_the_earlier_routing_is_re_created_and_re_routed(
    db, db_url, tmp_path, embedder, multilingual_embedder, caplog
):
    import qdrant_edge as qe

    indexes = local_indexes(tmp_path, embedder, multilingual_embedder)
    try:
        ws, ext = await _workspace(db, indexes)
        n = indexes.vectors.count()
    finally:
        indexes.close()
    # routing version 1's shard: named vectors "minilm" and "e5" (Russian, Hindi, Thai in "minilm")
    params = qe.EdgeVectorParams(size=384, distance=qe.Distance.Cosine)
    old = replace_shard(tmp_path, {"minilm": params, "e5": params})
    old.flush()
    old.close()

    indexes = local_indexes(tmp_path, embedder, multilingual_embedder)
    try:
        message = indexes.migration_message()
        assert message is not None and "named vectors e5, minilm" in message and "re-embedded" in message
        lex, vec = await catch_up_after_migration(indexes, db, caplog)
        assert vec == n == indexes.vectors.count() and lex == 0
        assert indexes.vectors.has_space(multilingual_embedder.space, workspace_id=ws)
        assert not indexes.vectors.has_space("minilm", workspace_id=ws)
        services = bootstrap(Settings(data_dir=tmp_path, database_url=db_url), db=db, indexes=indexes)
        assert await _first(services, ws, QUESTIONS["ru-baikal"], "DENSE", ext) == "ru-baikal"
    finally:
        indexes.close()


async def test_a_cluster_collection_of_the_earlier_analyzer_is_re_created_with_both_legs(
    db, db_url, tmp_path, embedder, multilingual_embedder, caplog
):
    """Cluster mode's sparse BM25 vectors are named with the analyzer version: a collection with
    version 1's ``bm25``/``bm25_tf`` is re-created and both legs re-applied."""
    from qdrant_client import QdrantClient, models

    from cairn.retrieval.lexical.sparse import BM25_VECTOR, TF_VECTOR

    dense = DenseModels(embedder, multilingual_embedder)
    store = tmp_path / "qdrant"

    def cluster() -> SearchIndexes:
        return cluster_indexes(tmp_path, embedder, multilingual_embedder)

    indexes = cluster()
    try:
        ws, ext = await _workspace(db, indexes)
        n = indexes.lexical.count()
    finally:
        indexes.close()
    client = QdrantClient(path=str(store))
    try:  # version 1's collection: today's dense spaces, the sparse vectors without a version
        client.delete_collection("passages")
        client.create_collection(
            "passages",
            vectors_config={
                name: models.VectorParams(size=size, distance=models.Distance.COSINE)
                for name, size in dense.spaces.items()
            },
            sparse_vectors_config={
                "bm25": models.SparseVectorParams(modifier=models.Modifier.IDF),
                "bm25_tf": models.SparseVectorParams(),
            },
        )
    finally:
        client.close()

    indexes = cluster()
    try:
        message = indexes.migration_message()
        assert message is not None and "sparse vectors bm25, bm25_tf" in message
        params = indexes.vectors.client.get_collection("passages").config.params
        assert set(params.sparse_vectors or {}) == {BM25_VECTOR, TF_VECTOR}
        lex, vec = await catch_up_after_migration(indexes, db, caplog)
        assert lex == vec == n and (indexes.lexical.count(), indexes.vectors.count()) == (n, n)
        services = bootstrap(
            Settings(data_dir=tmp_path / "d", database_url=db_url, vector_backend="local", lexical_backend="qdrant"),
            db=db,
            indexes=indexes,
        )
        assert await _first(services, ws, QUESTIONS["th-river"], "LEXICAL", ext) == "th-river"
    finally:
        indexes.close()


def test_memories_terms_are_re_derived_by_the_migration(tmp_path):
    """Revision 0015 replaces every memory's stored terms by the current analyzer's."""
    path = tmp_path / "cairn.db"
    url = f"sqlite+aiosqlite:///{path}"
    upgrade_database(url, revision="0014_passage_vector")
    texts = {"m1": "मेरा पसंदीदा वाद्य सितार है", "m2": "ชอบกินข้าวเหนียวมะม่วง", "m3": "I like green tea"}
    with sqlite3.connect(path) as con:
        for mid, text in texts.items():
            con.execute(
                "INSERT INTO agentmemory (id, workspace_id, owner_member_id, writer_id, namespace, version, text, "
                "entities, recorded_at) VALUES (?, 'w', 'o', 'c', 'default', 1, ?, '[]', '2026-12-01 00:00:00')",
                (mid, text),
            )
        # version 1's fragments of the Hindi memory (single letters), and a stale term of m3
        for mid, term in [("m1", "म"), ("m1", "र"), ("m1", "स"), ("m3", "stale")]:
            con.execute("INSERT INTO memoryterm VALUES (?, ?, 'w', 'o')", (mid, term))
    upgrade_database(url)
    with sqlite3.connect(path) as con:
        got: dict[str, list[str]] = {}
        for mid, term in con.execute("SELECT memory_id, term FROM memoryterm ORDER BY memory_id, term"):
            got.setdefault(mid, []).append(term)
    assert got == {mid: memory_terms(text) for mid, text in texts.items()}
    assert "सितार" in got["m1"] and "म" not in got["m1"]
