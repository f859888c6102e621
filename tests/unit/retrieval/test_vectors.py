"""Vector backends: qdrant-edge and qdrant-client local mode, congruent on the same data."""

from __future__ import annotations

import re

import numpy as np
import pytest

from cairn.retrieval.vectors import (
    ClientVectorIndex,
    EdgeVectorIndex,
    VectorIndex,
    VectorPoint,
    open_vector_index,
    point_id,
)

DIM = 16


def make_points(n: int = 120, seed: int = 7) -> list[VectorPoint]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    return [VectorPoint(f"p{i:03d}", vectors[i], f"w{i % 2}", f"c{i % 3}", f"d{i % 5}") for i in range(n)]


@pytest.fixture(params=["edge", "local"])
def backend(request, tmp_path):
    index = open_vector_index(path=tmp_path / "vec", dim=DIM, backend=request.param)
    yield index
    index.close()


def cosine_ranking(points: list[VectorPoint], query: np.ndarray, keep) -> list[str]:
    q = query / np.linalg.norm(query)
    scored = [(-(p.vector @ q) / np.linalg.norm(p.vector), p.passage_id) for p in points if keep(p)]
    return [pid for _, pid in sorted(scored)]


def test_point_ids_are_deterministic_uuid5():
    assert point_id("p1") == "2d7f0e0a-d9f7-594d-b565-641e45c310df"
    assert point_id("東京") == "53ac2776-d94e-51d2-9f57-4cb5a174273e"


def test_backends_implement_the_protocol(backend):
    assert isinstance(backend, VectorIndex)


def test_filtered_search_matches_brute_force_cosine(backend):
    points = make_points()
    backend.upsert(points)
    query = np.random.default_rng(1).standard_normal(DIM)
    hits = backend.search(
        query, workspace_id="w0", collection_ids=["c1", "c2"], document_ids=["d0", "d1", "d3"], limit=7
    )
    keep = lambda p: p.workspace_id == "w0" and p.collection_id in ("c1", "c2") and p.document_id in ("d0", "d1", "d3")  # noqa: E731
    assert [pid for pid, _ in hits] == cosine_ranking(points, query, keep)[:7]
    best = next(p for p in points if p.passage_id == hits[0][0])
    expected = float(best.vector @ query / np.linalg.norm(best.vector) / np.linalg.norm(query))
    assert hits[0][1] == pytest.approx(expected, abs=1e-5)


def test_empty_filters_and_unknown_workspace_match_nothing(backend):
    backend.upsert(make_points(10))
    q = np.ones(DIM)
    assert backend.search(q, workspace_id="w0", collection_ids=[]) == []
    assert backend.search(q, workspace_id="w0", document_ids=[]) == []
    assert backend.search(q, workspace_id="nobody") == []


def test_ties_order_by_passage_id_across_the_limit_cut(backend):
    names = [f"t{n:02d}" for n in (31, 4, 17, 9, 26, 1, 22, 13, 30, 6, 19, 2, 28, 11, 24, 7, 15, 3, 20, 27, 5, 10)]
    same = np.ones(DIM, dtype=np.float32)
    backend.upsert([VectorPoint(name, same, "wt", "c", "d") for name in names])
    hits = backend.search(same, workspace_id="wt", limit=4)
    assert [pid for pid, _ in hits] == ["t01", "t02", "t03", "t04"]
    assert [pid for pid, _ in backend.search(same, workspace_id="wt", limit=50)] == sorted(names)


def test_upsert_replaces_delete_has_count_clear(backend):
    backend.upsert(make_points(10))
    assert backend.count() == 10
    moved = VectorPoint("p003", np.ones(DIM, dtype=np.float32), "w9", "c9", "d9")
    backend.upsert([moved])
    assert backend.count() == 10
    assert [pid for pid, _ in backend.search(np.ones(DIM), workspace_id="w9")] == ["p003"]
    assert backend.has(["p003", "p004", "nope"]) == {"p003", "p004"}
    backend.delete(["p003", "nope"])
    assert backend.count() == 9
    assert backend.has(["p003"]) == set()
    assert backend.search(np.ones(DIM), workspace_id="w9") == []
    backend.clear()
    assert backend.count() == 0
    backend.upsert(make_points(3))
    assert backend.count() == 3


def test_vectors_returns_the_stored_unit_vectors(backend):
    points = make_points(5)
    backend.upsert(points)
    got = backend.vectors(["p001", "p004", "nope"])
    assert sorted(got) == ["p001", "p004"]
    for pid in got:
        v = next(p.vector for p in points if p.passage_id == pid)
        np.testing.assert_allclose(got[pid], v / np.linalg.norm(v), rtol=1e-5, atol=1e-6)
    assert backend.vectors([]) == {}


@pytest.mark.parametrize(
    "vector,kwargs",
    [
        (np.ones(DIM + 1), {"workspace_id": "w0"}),
        (np.zeros(DIM), {"workspace_id": "w0"}),
        (np.full(DIM, np.nan), {"workspace_id": "w0"}),
        (np.ones(DIM), {"workspace_id": ""}),
        (np.ones(DIM), {"workspace_id": "w0", "limit": 0}),
        (np.ones(DIM), {"workspace_id": "w0", "collection_ids": "c1"}),
    ],
)
def test_invalid_search_arguments(backend, vector, kwargs):
    with pytest.raises(ValueError):
        backend.search(vector, **kwargs)


def test_invalid_points(backend):
    with pytest.raises(ValueError):
        backend.upsert([VectorPoint("p", np.ones(DIM - 1), "w", "c", "d")])
    with pytest.raises(ValueError):
        backend.upsert([VectorPoint("p", np.ones(DIM), "", "c", "d")])
    assert backend.count() == 0


def test_edge_and_client_local_are_congruent(tmp_path):
    points = make_points(200, seed=11)
    edge = EdgeVectorIndex(tmp_path / "edge", dim=DIM)
    client = ClientVectorIndex(path=tmp_path / "client", dim=DIM)
    try:
        edge.upsert(points)
        client.upsert(points)
        rng = np.random.default_rng(3)
        filters = [
            {"workspace_id": "w0"},
            {"workspace_id": "w1", "collection_ids": ["c0"]},
            {"workspace_id": "w0", "document_ids": ["d2", "d4"]},
            {"workspace_id": "w1", "collection_ids": ["c1", "c2"], "document_ids": ["d1"]},
        ]
        for i in range(12):
            query = rng.standard_normal(DIM)
            kwargs = filters[i % len(filters)]
            a = edge.search(query, limit=15, **kwargs)
            b = client.search(query, limit=15, **kwargs)
            assert [pid for pid, _ in a] == [pid for pid, _ in b]
            assert len(a) > 0
            assert np.allclose([s for _, s in a], [s for _, s in b], atol=1e-5)
        assert edge.count() == client.count() == 200
        assert edge.has(["p000", "zzz"]) == client.has(["p000", "zzz"]) == {"p000"}
    finally:
        edge.close()
        client.close()


@pytest.mark.parametrize("backend_name", ["edge", "local"])
def test_persistence_across_reopen(tmp_path, backend_name):
    points = make_points(30)
    index = open_vector_index(path=tmp_path / "store", dim=DIM, backend=backend_name)
    index.upsert(points)
    query = np.random.default_rng(5).standard_normal(DIM)
    before = index.search(query, workspace_id="w1", limit=5)
    index.close()
    index.close()  # idempotent
    reopened = open_vector_index(path=tmp_path / "store", dim=DIM, backend=backend_name)
    try:
        assert reopened.count() == 30
        after = reopened.search(query, workspace_id="w1", limit=5)
        assert [pid for pid, _ in after] == [pid for pid, _ in before]
        if backend_name == "edge":
            assert after == before  # bit-identical scores after a restart
        else:
            # qdrant-client local mode scores in float64 from memory but float32 after a
            # reload: same order, scores equal to ~1e-8 only.
            assert np.allclose([s for _, s in after], [s for _, s in before], atol=1e-6)
    finally:
        reopened.close()


def test_edge_layout_dimension_check_and_use_after_close(tmp_path):
    index = open_vector_index(path=tmp_path, collection="passages", dim=DIM)
    assert (tmp_path / "passages" / "edge_config.json").exists()
    index.close()
    with pytest.raises(ValueError):
        index.count()
    with pytest.raises(ValueError):
        EdgeVectorIndex(tmp_path / "passages", dim=DIM + 1)


def test_client_collection_dimension_check(tmp_path):
    ClientVectorIndex(path=tmp_path / "c", collection="x", dim=DIM).close()
    with pytest.raises(ValueError):
        ClientVectorIndex(path=tmp_path / "c", collection="x", dim=DIM * 2)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"backend": "faiss", "path": "x"},
        {"backend": "edge"},
        {"backend": "edge", "path": "x", "url": "http://127.0.0.1:6333"},
        {"backend": "client"},  # the old name: one vocabulary (auto | edge | local | server) now
        {"backend": "local"},
        {"backend": "local", "path": "x", "url": "http://127.0.0.1:6333"},
        {"backend": "server"},
        {"backend": "edge", "path": "x", "collection": "../up"},
    ],
)
def test_open_vector_index_rejects_bad_configuration(kwargs):
    with pytest.raises(ValueError):
        open_vector_index(**kwargs)


def test_client_index_accepts_an_injected_client_and_leaves_it_open():
    from qdrant_client import QdrantClient

    client = QdrantClient(location=":memory:")
    index = ClientVectorIndex(client=client, collection="mem", dim=DIM)
    index.upsert(make_points(5))
    assert index.count() == 5
    index.close()
    assert client.count("mem", exact=True).count == 5
    client.close()
    with pytest.raises(ValueError):
        ClientVectorIndex(client=client, path="x", dim=DIM)


def test_an_edge_shard_held_elsewhere_is_vector_store_in_use(tmp_path):
    from cairn.retrieval.vectors import VectorStoreInUse

    held = open_vector_index(path=tmp_path, dim=DIM, backend="edge")
    try:
        with pytest.raises(VectorStoreInUse, match="is open in another process"):  # was: WouldBlock RuntimeError
            open_vector_index(path=tmp_path, dim=DIM, backend="edge")
    finally:
        held.close()
    open_vector_index(path=tmp_path, dim=DIM, backend="edge").close()


def test_resolve_backend_one_vocabulary():
    from cairn.retrieval.vectors import BACKENDS, resolve_backend

    assert BACKENDS == ("auto", "edge", "local", "server")
    assert [resolve_backend("auto", None), resolve_backend("auto", "http://q:6333")] == ["edge", "server"]
    assert [resolve_backend(b, None) for b in ("edge", "local", "server")] == ["edge", "local", "server"]
    with pytest.raises(ValueError, match=re.escape("one of auto | edge | local | server, got 'client'")):
        resolve_backend("client", None)


SPACES = {"minilm": DIM, "e5": DIM * 2}


def _legacy_store(tmp_path, backend_name: str):
    """A store of the layout before named vectors (one unnamed vector), as the previous version wrote it."""
    if backend_name == "edge":
        import qdrant_edge as qe

        path = tmp_path / "store" / "passages"
        path.mkdir(parents=True)
        shard = qe.EdgeShard.create(
            str(path), qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine))
        )
        shard.update(qe.UpdateOperation.upsert_points([qe.Point(point_id("old"), [1.0] * DIM, {"passage_id": "old"})]))
        shard.close()
    else:
        from qdrant_client import QdrantClient, models

        client = QdrantClient(path=str(tmp_path / "store"))
        client.create_collection(
            "passages", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
        )
        client.upsert("passages", points=[models.PointStruct(id=point_id("old"), vector=[1.0] * DIM, payload={})])
        client.close()


@pytest.mark.parametrize("backend_name", ["edge", "local"])
def test_named_vectors_keep_models_apart_and_an_old_layout_is_re_created(tmp_path, backend_name):
    _legacy_store(tmp_path, backend_name)
    index = open_vector_index(path=tmp_path / "store", spaces=SPACES, backend=backend_name)
    try:
        assert index.migrated is not None and "one unnamed vector (16 dims" in index.migrated  # type: ignore[attr-defined]
        assert index.count() == 0
        rng = np.random.default_rng(3)
        small = [VectorPoint(f"m{i}", rng.standard_normal(DIM), "w", "c", "d", space="minilm") for i in range(5)]
        large = [VectorPoint(f"e{i}", rng.standard_normal(DIM * 2), "w", "c", "d", space="e5") for i in range(4)]
        index.upsert(small + large)
        assert index.count() == 9
        got = index.search(rng.standard_normal(DIM * 2), workspace_id="w", limit=20, space="e5")
        assert sorted(pid for pid, _ in got) == ["e0", "e1", "e2", "e3"]  # only e5 points, never MiniLM's
        got = index.search(rng.standard_normal(DIM), workspace_id="w", limit=20)  # default space: minilm
        assert sorted(pid for pid, _ in got) == [f"m{i}" for i in range(5)]
        assert index.has_space("e5", workspace_id="w") and not index.has_space("e5", workspace_id="other")
        assert index.vectors(["e1"])["e1"].shape == (DIM * 2,)
        with pytest.raises(ValueError, match="space must be one of"):
            index.search(rng.standard_normal(DIM), workspace_id="w", space="nope")
        with pytest.raises(ValueError, match="shape"):  # a vector of the other model's size
            index.upsert([VectorPoint("x", rng.standard_normal(DIM), "w", "c", "d", space="e5")])
    finally:
        index.close()
    reopened = open_vector_index(path=tmp_path / "store", spaces=SPACES, backend=backend_name)
    try:
        assert reopened.migrated is None and reopened.count() == 9  # type: ignore[attr-defined]
    finally:
        reopened.close()


def test_merge_spaces_scores_another_space_by_how_far_it_stands_out_of_its_own_list():
    from cairn.retrieval.dense import lead_space, merge_spaces, profile, scale_by_space

    minilm = [("en1", 0.62), ("en2", 0.40), ("en3", 0.38), ("en4", 0.20)]
    # e5's list: one passage far above the rest (a match), the others at the unrelated level
    e5 = [("ja1", 0.95)] + [(f"ja{i}", 0.80 + 0.001 * (i % 3)) for i in range(2, 40)]
    lists = {"minilm": minilm, "e5": e5}
    assert lead_space(lists) == "minilm" and lead_space({"minilm": [], "e5": e5}) == "e5"
    own, base = profile(e5), profile(minilm)
    z = own.stand_out(0.95)
    assert z > 6  # ja1 stands out; ja2.. (z < 1) do not
    merged = merge_spaces(lists, 10, min_stand_out=6.0)
    # ja1 counts as the MiniLM cosine as far above MiniLM's list: above en1 here; the rest never join
    assert [pid for pid, _ in merged] == ["ja1", "en1", "en2", "en3", "en4"]
    assert merged[0][1] == pytest.approx(base.mean + z * base.std)
    assert merged[1:] == minilm
    # a passage of another space that does not stand out enough does not join
    assert [pid for pid, _ in merge_spaces(lists, 10, min_stand_out=z + 0.1)] == ["en1", "en2", "en3", "en4"]
    # one list (or only one with results) is returned as given, truncated
    assert merge_spaces({"minilm": [], "e5": e5}, 3) == e5[:3]
    assert merge_spaces({"minilm": minilm}, 2) == minilm[:2]
    assert merge_spaces({}, 2) == [] and profile([]).stand_out(1.0) == 0.0
    assert scale_by_space([("x", -0.2)], {}) == [("x", 0.0)]  # no evidence: adds nothing
    # a model whose unrelated texts reach 0.80: evidence is the cosine above that, scaled to its top
    e5s = [("ja1", 0.91), ("ja2", 0.88), ("ja3", 0.80)]
    assert scale_by_space(e5s, {p: "e5" for p, _ in e5s}, {"e5": 0.80}) == [
        ("ja1", 1.0),
        ("ja2", pytest.approx(0.08 / 0.11)),
        ("ja3", 0.0),
    ]
    assert scale_by_space([("ja9", 0.79)], {"ja9": "e5"}, {"e5": 0.80}) == [("ja9", 0.0)]
