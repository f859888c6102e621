"""Document titles from the document (app/corpus/titles.py): HTML ``<title>`` (then ``<h1>``),
Markdown front matter and first level-1 heading, PDF ``/Title`` and XMP ``dc:title``, .docx core
properties; the file name otherwise; whitespace collapsed, length limited to 150 characters.
Real files written to a folder and read by :func:`iter_sources`, as ``cairn ingest`` does."""

from __future__ import annotations

import io
import secrets

import docx
import pypdf
from sqlalchemy import select

from cairn.app.core.models import Document
from cairn.app.corpus.ingest import ingest_documents
from cairn.app.corpus.sources import iter_sources
from cairn.app.corpus.titles import MAX_DERIVED_TITLE_CHARS, clean_title, markdown_title
from cairn.app.identity import service as identity
from tests.conftest import shared_data
from tests.db.pdf_files import pdf_file
from tests.db.test_ingest_binary import tiny_docx, tiny_pdf

LONG = "The complete and unabridged operating handbook of the northern kitchen " * 4


def _pdf_with_info(title: str) -> bytes:
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(tiny_pdf(["Kitchen hours: 7 to 22."])))
    writer.add_metadata({"/Title": title})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _pdf_with_xmp(title: str) -> bytes:
    """A PDF whose only title is XMP ``dc:title`` (no document information dictionary)."""
    xmp = (
        '<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/">'
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        '<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f'<dc:title><rdf:Alt><rdf:li xml:lang="x-default">{title}</rdf:li></rdf:Alt></dc:title>'
        '</rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>'
    ).encode()
    stream = b"BT /F1 12 Tf 72 720 Td (Loading dock opens at six.) Tj ET"
    return pdf_file(
        [
            b"<< /Type /Catalog /Pages 2 0 R /Metadata 6 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Type /Metadata /Subtype /XML /Length "
            + str(len(xmp)).encode()
            + b" >>\nstream\n"
            + xmp
            + b"\nendstream",
        ]
    )


def _docx_titled(title: str) -> bytes:
    d = docx.Document(io.BytesIO(tiny_docx(["Staff meals are served at 15:00."])))
    d.core_properties.title = title
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def _folder(tmp_path):
    root = tmp_path / "handbook"
    root.mkdir()
    files = {
        # an <svg>'s <title> labels a picture, not the page; entities and newlines in the title
        "kitchen.html": "<html><head><svg><title>logo</title></svg><title>\n  Kitchen &amp; Bar\n\thours </title>"
        "</head><body><h1>Opening hours</h1><p>The kitchen closes at 22:00.</p></body></html>",
        "bar.html": "<html><body><h1>Bar <em>menu</em></h1><p>Cocktails until midnight.</p></body></html>",
        "blank.html": "<html><head><title>  </title></head><body><p>No heading at all.</p></body></html>",
        "fenced.md": "```\n# not a title: inside code\n```\n\nIntro text.\n\n## Section\n\n"
        "# The **kitchen** [rota](rota.html) {#rota}\n\nMonday: Ana.",
        "setext.md": "Cleaning  schedule\n==================\n\nFloors nightly.",
        "front.md": '---\ntitle: "Allergen  policy"\nauthor: Chef\n---\n# Not this one\n\nNuts are labelled.',
        "untitled.md": "## Only a second-level heading\n\nText without a title.",
        "notes.txt": "# A plain text file: its first line is no heading\n\nDeliveries on Tuesday.",
        "long.md": f"# {LONG}\n\nBody.",
        "hours.pdf": _pdf_with_info("Kitchen\nopening   hours"),
        "untitled.pdf": _pdf_with_info("Untitled"),
        "dock.pdf": _pdf_with_xmp("Loading dock rules"),
        "meals.docx": _docx_titled("  Staff  meals "),
        "plain.docx": tiny_docx(["A document without a title property."]),
    }
    for name, body in files.items():
        (root / name).write_bytes(body if isinstance(body, bytes) else body.encode())
    return root


def test_titles_come_from_the_document_and_the_file_name_is_the_fallback(tmp_path):
    titles = {d.external_id: d.title for d in iter_sources(_folder(tmp_path))}
    long_title = titles.pop("long.md")
    assert titles == {
        "kitchen.html": "Kitchen & Bar hours",
        "bar.html": "Bar menu",
        "blank.html": "blank.html",
        "fenced.md": "The kitchen rota",
        "setext.md": "Cleaning schedule",
        "front.md": "Allergen policy",
        "untitled.md": "untitled.md",
        "notes.txt": "notes.txt",
        "hours.pdf": "Kitchen opening hours",
        "untitled.pdf": "untitled.pdf",
        "dock.pdf": "Loading dock rules",
        "meals.docx": "Staff meals",
        "plain.docx": "plain.docx",
    }
    # cut at the last word boundary inside the limit (150 characters), ellipsis included
    assert long_title == "The complete and unabridged operating handbook of the northern kitchen " * 2 + "The…"
    assert len(long_title) == 146 <= MAX_DERIVED_TITLE_CHARS == 150


def test_clean_title_collapses_whitespace_drops_invisible_characters_and_placeholders():
    assert clean_title(" A\u00a0\u2028title\twith\n\nbreaks\u202e ") == "A title with breaks"
    assert clean_title("Microsoft Word - NDA final.docx") == "NDA final.docx"
    assert [clean_title(t) for t in ("", " \n ", "Untitled", "DOCUMENT", None)] == [None] * 5
    assert clean_title("x" * 400) == "x" * (MAX_DERIVED_TITLE_CHARS - 1) + "…"  # one word: cut inside it
    # a heading made only of markup, or an empty ATX heading, is no title: the next one is
    assert markdown_title("#\n\n# `ok` ![alt](a.png)\n") == "ok alt"
    assert markdown_title("---\ntitle: [not, a, string]\n---\n# Heading\n") == "Heading"


def test_real_pdfs_state_their_title_or_fall_back_to_the_file_name():
    """Kleister NDA: 1 of the 15 SEC filings has a document information /Title (the EDGAR
    converter's); the 14 others have no title and keep their file name."""
    folder = shared_data("kleister-nda", "pdf")
    titles = {d.external_id: d.title for d in iter_sources(folder)}
    assert len(titles) == 15
    stated = {k: v for k, v in titles.items() if v != k}
    assert stated == {"07b135b30e301560ecfde236c9311975.pdf": "EX-10.1 2 v442226_ex10-1.htm EXHIBIT 10.1"}


async def test_ingest_stores_the_titles_and_a_changed_title_updates_the_document(db, tmp_path):
    async with db.session() as s:
        ws = (await identity.create_workspace(s, name=f"titles-{secrets.token_hex(4)}")).id
    root = _folder(tmp_path)
    report = await ingest_documents(db, None, workspace_id=ws, collection="kitchen", documents=iter_sources(root))
    assert report.created == 14 and not report.skipped

    async def stored() -> dict[str, str]:
        async with db.session() as s:
            rows = (
                await s.execute(select(Document.external_id, Document.title).where(Document.workspace_id == ws))
            ).all()
        return dict(rows)

    assert (await stored())["kitchen.html"] == "Kitchen & Bar hours"
    (root / "setext.md").write_text("Cleaning rota\n=============\n\nFloors nightly.")
    again = await ingest_documents(db, None, workspace_id=ws, collection="kitchen", documents=iter_sources(root))
    assert (again.updated, again.unchanged) == (1, 13)
    assert (await stored())["setext.md"] == "Cleaning rota"
