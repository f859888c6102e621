"""Ingest from files/folders/JSONL(.gz), idempotence, and index catch-up after a crash."""

from __future__ import annotations

import gzip
import io
import json
import secrets
import zipfile

import pytest
from sqlalchemy import func, select

from cairn.app.core.errors import BadInput
from cairn.app.core.models import IndexChange, Passage
from cairn.app.corpus.indexing import SearchIndexes
from cairn.app.corpus.ingest import ingest_documents
from cairn.app.corpus.sources import iter_sources
from cairn.app.identity import service as identity
from cairn.retrieval.lexical import WhooshIndex
from cairn.retrieval.vectors import open_vector_index


def _corpus(tmp_path):
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("Plain text about glaciers and moraines.\n\nA second paragraph on fjords.")
    (root / "b.md").write_text("# Heading\n\nMarkdown about *volcanoes* and lava.")
    (root / "sub" / "c.html").write_text(
        "<html><head><style>x{}</style><script>evil()</script></head>"
        "<body><h1>Deserts</h1><p>Dunes &amp; oases.</p></body></html>"
    )
    with gzip.open(root / "d.jsonl.gz", "wt") as fh:
        fh.write(
            json.dumps(
                {
                    "_id": "j1",
                    "title": "Rivers",
                    "text": "Deltas form where rivers meet the sea.",
                    "validFrom": "2021-01-01T00:00:00Z",
                }
            )
            + "\n"
        )
        fh.write("\n")
        fh.write(json.dumps({"_id": "j2", "title": "海", "text": "東京湾は太平洋につながっています。"}) + "\n")
    (root / "ignored.bin").write_bytes(b"\x00\x01")
    return root


def _zip(members: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, text in members.items():
            z.writestr(name, text)
    return buf.getvalue()


# Binary files whatever their extension: (name, bytes, the reason reported)
BINARY = [
    (
        "paper.txt",
        b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj << /Type /Catalog >>",
        "not text: a PDF file (application/pdf)",
    ),
    ("ascii-pdf.md", b"%PDF-1.4\n1 0 obj << >> endobj\n", "not text: a PDF file (application/pdf)"),
    (
        "report.md",
        _zip({"[Content_Types].xml": "<Types/>", "_rels/.rels": "<R/>", "word/document.xml": "<w:d/>"}),
        "not text: a DOCX file (application/vnd.openxmlformats-officedocument.wordprocessingml.document)",
    ),
    ("archive.txt", _zip({"a.txt": "hello"}), "not text: a ZIP file (application/zip)"),
    ("logo.html", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "not text: a PNG file (image/png)"),
    ("blob.txt", b"abc\x00\x01\x02def", "not text: binary data (NUL bytes)"),
    (
        "latin1.txt",
        "café crème".encode("latin-1"),
        "not text: not UTF-8 text (byte 0xe9 at offset 3); convert it to UTF-8",
    ),
    ("fake.txt.gz", b"plain, not gzip", "not text: not gzip data (Not a gzipped file (b'pl'))"),
    ("rows.jsonl", b"%PDF-1.5\n\x00\x00binary", "not text: a PDF file (application/pdf)"),
]


def test_sources_cover_every_format(tmp_path):
    skipped = []
    docs = list(iter_sources(_corpus(tmp_path), skipped=skipped))
    by_id = {d.external_id: d for d in docs}
    assert sorted(by_id) == ["a.txt", "b.md", "j1", "j2", "sub/c.html"]
    assert [(s.path, s.reason) for s in skipped] == [
        (
            "ignored.bin",
            "unsupported type .bin; supported: .txt .md .markdown .html .htm .jsonl .csv (optionally .gz), .pdf .docx",
        )
    ]
    assert by_id["sub/c.html"].text.split() == ["Deserts", "Dunes", "&", "oases."]
    assert by_id["j1"].valid_from.year == 2021 and by_id["j1"].title == "Rivers"
    assert by_id["b.md"].media_type == "text/markdown"


async def _ws(db):
    async with db.session() as s:
        return (await identity.create_workspace(s, name=f"ingest-{secrets.token_hex(4)}")).id


async def test_ingest_is_idempotent_and_repairs_indexes_after_a_crash(db, tmp_path, embedder):
    ws = await _ws(db)
    corpus = _corpus(tmp_path)
    # "crash": SQL committed, derived indexes never written
    first = await ingest_documents(db, None, workspace_id=ws, collection="geo", documents=iter_sources(corpus))
    assert (first.created, first.updated, first.unchanged, first.new_passages) == (5, 0, 0, 5)
    async with db.session() as s:  # each new passage is in the change log, written with it
        logged = (
            await s.execute(
                select(func.count())
                .select_from(IndexChange)
                .join(Passage, Passage.id == IndexChange.passage_id)
                .where(Passage.workspace_id == ws)
            )
        ).scalar_one()
    assert logged == first.new_passages
    indexes = SearchIndexes(
        lexical=WhooshIndex(tmp_path / "whoosh"),
        vectors=open_vector_index(path=tmp_path / "qdrant", dim=embedder.dim),
        embedder=embedder,
    )
    try:
        lex, vec = await indexes.index_pending(db)  # what start-up runs
        assert lex >= first.new_passages and vec >= first.new_passages
        assert indexes.lexical.search("glaciers moraines", workspace_id=ws)
        assert indexes.lexical.search("東京湾", workspace_id=ws)
        assert await indexes.index_pending(db) == (0, 0)
        again = await ingest_documents(db, indexes, workspace_id=ws, collection="geo", documents=iter_sources(corpus))
        assert (again.created, again.updated, again.unchanged, again.new_passages) == (0, 0, 5, 0)
        (corpus / "a.txt").write_text("Plain text about glaciers and moraines.\n\nA changed paragraph on ice caps.")
        changed = await ingest_documents(db, indexes, workspace_id=ws, collection="geo", documents=iter_sources(corpus))
        assert (changed.updated, changed.unchanged) == (1, 4) and changed.lexical_indexed >= 1
        n_lex, n_vec = indexes.lexical.count(), indexes.vectors.count()
        assert await indexes.reindex(db) and (indexes.lexical.count(), indexes.vectors.count()) == (n_lex, n_vec)
    finally:
        indexes.close()


def test_binary_content_is_skipped_and_reported_whatever_the_extension(tmp_path):
    root = tmp_path / "mixed"
    (root / ".git" / "objects").mkdir(parents=True)
    (root / ".git" / "objects" / "ab").write_bytes(b"x\x9c")
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    for name, data, _ in BINARY:
        (root / name).write_bytes(data)
    (root / "notes.txt").write_text("BMW is a car maker.")  # starts like a BMP signature: still text
    (root / "bom.md").write_bytes("\ufeffCafé au lait".encode("utf-8"))
    (root / "utf16.txt").write_bytes("Grüße aus Köln".encode("utf-16"))
    (root / "blank.txt").write_text("  \n")
    (root / "empty.html").write_text("<html><script>x()</script></html>")
    skipped = []
    docs = {d.external_id: d.text for d in iter_sources(root, skipped=skipped)}
    assert docs == {"notes.txt": "BMW is a car maker.", "bom.md": "Café au lait", "utf16.txt": "Grüße aus Köln"}
    assert sorted((s.path, s.reason) for s in skipped) == sorted(
        [(name, reason) for name, _, reason in BINARY]
        + [(".git/", "hidden folder, not read (2 files)"), ("blank.txt", "no text"), ("empty.html", "no text")]
    )
    # one file named explicitly: refused with the same reason
    for name, _, reason in BINARY:
        with pytest.raises(BadInput) as exc:
            list(iter_sources(root / name))
        assert exc.value.message == f"{name}: {reason}"


def test_symbolic_links_in_a_folder_are_skipped_and_reported_never_followed(tmp_path):
    """A link in a handed-over folder may point anywhere (``/etc/passwd``, a secrets folder):
    ingest reads only the folder's own files and says which links it did not follow."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("api key: hunter2")
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "readme.txt").write_text("Cairn packs cited evidence.")
    (root / "passwd.txt").symlink_to(outside / "secret.txt")
    (root / "sub" / "elsewhere").symlink_to(outside, target_is_directory=True)
    (root / "sub" / "loop").symlink_to(root, target_is_directory=True)
    skipped = []
    docs = {d.external_id: d.text for d in iter_sources(root, skipped=skipped)}
    assert docs == {"readme.txt": "Cairn packs cited evidence."}
    assert sorted((s.path, s.reason) for s in skipped) == [
        ("passwd.txt", "symbolic link, not followed"),
        ("sub/elsewhere/", "symbolic link, not followed"),
        ("sub/loop/", "symbolic link, not followed"),
    ]


def test_jsonl_decoding_errors_name_the_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(json.dumps({"_id": "1", "text": "ok"}).encode() + b"\n" + b'{"_id": "2", "text": "caf\xe9"}\n')
    with pytest.raises(BadInput) as exc:
        list(iter_sources(bad))
    assert exc.value.message == "bad.jsonl:2: not UTF-8 (byte 0xe9 at column 26)"
    big = tmp_path / "big.jsonl"  # the 8 KiB sniffed head ends inside a line
    rows = [{"_id": str(i), "text": "é" * 50 + f" row {i}"} for i in range(300)]
    big.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert [d.external_id for d in iter_sources(big)] == [str(i) for i in range(300)]


async def test_a_file_whose_name_breaks_the_name_rules_is_skipped_not_the_whole_run(db, tmp_path):
    # A control character in one file name aborted the folder ingest with nothing ingested.
    ws = await _ws(db)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.txt").write_text("Granite is an igneous rock.")
    (folder / "a\x1bb.txt").write_text("Escape characters hide in names.")
    (folder / "line\nbreak.md").write_text("A newline in a file name.")
    report = await ingest_documents(db, None, workspace_id=ws, collection="names", documents=iter_sources(folder))
    assert report.created == 1
    assert sorted(s.path for s in report.skipped) == ["a\\x1bb.txt", "line\\nbreak.md"]
    assert all("control character" in s.reason and "input.externalId" in s.reason for s in report.skipped)
