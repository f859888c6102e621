"""HTML and CSV ingest on SQLite and PostgreSQL, from real files in a temp folder: HTML's visible
text only (scripts and styles stripped) and CSV rows as ``header: value`` documents, each
passage an exact span of the stored version text; a mixed folder reports every skipped file
and row with the reason; a binary file named .html or .csv is refused, not indexed."""

from __future__ import annotations

import gzip
import secrets

import pytest
from sqlalchemy import select

from cairn.app.core.errors import BadInput
from cairn.app.core.ids import sha256_text
from cairn.app.core.models import Document, DocumentVersion, Passage, VersionPassage
from cairn.app.corpus.ingest import ingest_documents
from cairn.app.corpus.sources import csv_rows, iter_sources
from cairn.app.identity import service as identity
from tests.db.test_ingest_binary import tiny_pdf

PAGE = """<!doctype html><html><head><title>Ignored title</title>
<style>body { color: red }</style><script>window.secret = "do not index";</script></head>
<body><nav>Home &rsaquo; Docs</nav><h1>Glacier   guide</h1>
<p>Glaciers carve <b>U-shaped</b> valleys &amp; leave moraines.</p>
<noscript>enable scripts</noscript><ul><li>Fjords</li><li>Cirques</li></ul>
<pre>  keep   this
  spacing</pre><script type="module">import x from "y";</script></body></html>"""

CSV = (
    "name,country, elevation m ,notes\n"
    'Mont Blanc,France/Italy,4806,"Highest of the Alps, on the border"\n'
    "\n"
    "Zugspitze,Germany,2962,\n"
    "Broken,row,1,2,3\n"
    '"Snezka","Czechia",1603,"quoted ""name"" inside"\n'
)


def test_html_text_is_the_visible_text(tmp_path):
    (tmp_path / "guide.html").write_text(PAGE)
    (doc,) = iter_sources(tmp_path / "guide.html")
    assert doc.media_type == "text/html"
    assert doc.text == (
        "Home › Docs\n\nGlacier guide\n\nGlaciers carve U-shaped valleys & leave moraines.\n\n"
        "Fjords\n\nCirques\n\n  keep   this\n  spacing"
    )
    for hidden in ("secret", "do not index", "color", "Ignored title", "enable scripts", "import"):
        assert hidden not in doc.text


def test_csv_rows_are_documents_with_header_value_lines(tmp_path):
    skipped = []
    docs = csv_rows(CSV, "peaks.csv", "peaks.csv", skipped)
    assert [d.external_id for d in docs] == ["peaks.csv#row=1", "peaks.csv#row=2", "peaks.csv#row=4"]
    assert docs[0].text == (
        "name: Mont Blanc\ncountry: France/Italy\nelevation m: 4806\nnotes: Highest of the Alps, on the border"
    )
    assert docs[1].text == "name: Zugspitze\ncountry: Germany\nelevation m: 2962"  # the empty cell is left out
    assert docs[2].text.endswith('notes: quoted "name" inside') and docs[2].title == "peaks.csv row 4"
    assert [(s.path, s.reason) for s in skipped] == [("peaks.csv#row=3", "5 cells; the header has 4 columns")]
    # semicolons and tabs are sniffed from the header line; blank and repeated headers get names
    semi = csv_rows("a;a;\n1;2;3\n", "s.csv", "s.csv", [])
    assert semi[0].text == "a: 1\na (2): 2\ncolumn 3: 3"
    tabs = csv_rows("k\tv\nx\ty\n", "t.csv", "t.csv", [])
    assert tabs[0].text == "k: x\nv: y"


def test_a_mixed_folder_reports_every_skipped_file_and_row(tmp_path):
    root = tmp_path / "mixed"
    (root / "deep").mkdir(parents=True)
    (root / "guide.htm").write_text(PAGE)
    (root / "peaks.csv").write_text(CSV)
    (root / "deep" / "peaks.csv.gz").write_bytes(gzip.compress(CSV.encode()))
    (root / "header-only.csv").write_text("a,b\n")
    (root / "scan.html").write_bytes(tiny_pdf(["not html"]))  # a PDF renamed .html
    (root / "image.csv").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")  # a PNG renamed .csv
    (root / "slides.pptx").write_bytes(b"PK\x03\x04")
    skipped = []
    docs = {d.external_id: d for d in iter_sources(root, skipped=skipped)}
    assert sorted(docs) == [
        "deep/peaks.csv.gz#row=1",
        "deep/peaks.csv.gz#row=2",
        "deep/peaks.csv.gz#row=4",
        "guide.htm",
        "peaks.csv#row=1",
        "peaks.csv#row=2",
        "peaks.csv#row=4",
    ]
    reasons = {s.path: s.reason for s in skipped}
    assert reasons == {
        "deep/peaks.csv.gz#row=3": "5 cells; the header has 4 columns",
        "header-only.csv": "no data rows (a CSV needs a header row and at least one row)",
        "image.csv": "not text: a PNG file (image/png)",
        "peaks.csv#row=3": "5 cells; the header has 4 columns",
        "scan.html": "not text: a PDF file (application/pdf)",
        "slides.pptx": "unsupported type .pptx; supported: .txt .md .markdown .html .htm .jsonl .csv (optionally .gz), "
        ".pdf .docx",
    }
    # a binary file named alone is refused with the same reason
    with pytest.raises(BadInput) as exc:
        list(iter_sources(root / "scan.html"))
    assert exc.value.message == "scan.html: not text: a PDF file (application/pdf)"


async def test_html_and_csv_passages_are_exact_spans_of_the_stored_text(db, tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "guide.html").write_text(PAGE)
    (root / "peaks.csv").write_text(CSV)
    async with db.session() as s:
        ws = (await identity.create_workspace(s, name=f"formats-{secrets.token_hex(4)}")).id
    skipped = []
    docs = list(iter_sources(root, skipped=skipped))  # read before any store is touched, as `cairn ingest`
    report = await ingest_documents(
        db, None, workspace_id=ws, collection="formats", documents=iter(docs), skipped=skipped
    )
    assert (report.created, [s.path for s in report.skipped]) == (4, ["peaks.csv#row=3"])
    async with db.session() as s:
        rows = (
            await s.execute(
                select(
                    Document.external_id, DocumentVersion.text, Passage.text, VersionPassage.start, VersionPassage.end
                )
                .join(DocumentVersion, DocumentVersion.document_id == Document.id)
                .join(VersionPassage, VersionPassage.version_id == DocumentVersion.id)
                .join(Passage, Passage.id == VersionPassage.passage_id)
                .where(Document.workspace_id == ws)
            )
        ).all()
    assert {r[0] for r in rows} == {"guide.html", "peaks.csv#row=1", "peaks.csv#row=2", "peaks.csv#row=4"}
    for _ext, version_text, passage_text, start, end in rows:
        assert version_text[start:end] == passage_text  # the citation span is exact
        assert sha256_text(version_text[start:end]) == sha256_text(passage_text)
    stored = {r[0]: r[1] for r in rows}
    assert "do not index" not in stored["guide.html"] and "Glaciers carve U-shaped valleys" in stored["guide.html"]
    assert stored["peaks.csv#row=2"] == "name: Zugspitze\ncountry: Germany\nelevation m: 2962"
