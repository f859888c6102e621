"""PDF (pypdf) and .docx (python-docx) ingest: text extracted, citations point into it, and a
file whose bytes are not what its extension says is skipped with the reason."""

from __future__ import annotations

import io
import shutil

import docx
import pytest

from cairn.app.core.errors import BadInput
from cairn.app.corpus.sources import iter_sources
from tests.conftest import shared_data
from tests.db.pdf_files import pdf_file


def tiny_pdf(lines: list[str]) -> bytes:
    """A one-page PDF (Helvetica) showing ``lines``, written by hand with a correct xref table."""
    ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
    for line in lines:
        ops.append("(" + line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ") Tj T*")
    ops.append("ET")
    stream = "\n".join(ops).encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    return pdf_file(objects)


def tiny_docx(paragraphs: list[str], table: list[list[str]] | None = None) -> bytes:
    d = docx.Document()
    for p in paragraphs:
        d.add_paragraph(p)
    if table:
        t = d.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, cell in enumerate(row):
                t.cell(r, c).text = cell
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def test_pdf_and_docx_text_is_ingested_and_bad_ones_are_reported(tmp_path):
    root = tmp_path / "ndas"
    root.mkdir()
    (root / "nda.pdf").write_bytes(
        tiny_pdf(["This Agreement is governed by the laws of Delaware.", "Term: two years."])
    )
    (root / "nda2.docx").write_bytes(
        tiny_docx(["Effective Date: March 1, 2020", "Governing law: New York."], [["Party", "Acme Inc."]])
    )
    (root / "fake.pdf").write_bytes(b"just some text named .pdf")
    (root / "fake.docx").write_bytes(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    (root / "scan.pdf").write_bytes(tiny_pdf([]))
    (root / "scan.txt").write_bytes(tiny_pdf(["hidden"]))  # a PDF renamed .txt stays refused
    skipped = []
    docs = {d.external_id: d for d in iter_sources(root, skipped=skipped)}
    assert sorted(docs) == ["nda.pdf", "nda2.docx"]
    pdf = docs["nda.pdf"]
    assert pdf.media_type == "application/pdf"
    assert "governed by the laws of Delaware." in pdf.text and "Term: two years." in pdf.text
    assert docs["nda2.docx"].text == "Effective Date: March 1, 2020\nGoverning law: New York.\nParty\tAcme Inc."
    reasons = {s.path: s.reason for s in skipped}
    assert reasons == {
        "fake.pdf": "not a PDF: unrecognised bytes",
        "fake.docx": "not a Word .docx: a PDF file (application/pdf)",
        "scan.pdf": "a PDF with no text layer (1 page(s); a scan needs OCR first)",
        "scan.txt": "not text: a PDF file (application/pdf)",
    }
    with pytest.raises(BadInput) as exc:
        list(iter_sources(root / "fake.pdf"))
    assert exc.value.message == "fake.pdf: not a PDF: unrecognised bytes"


@pytest.mark.shared_data
def test_the_kleister_pdfs_are_read(tmp_path):
    src = shared_data("kleister-nda", "pdf")
    root = tmp_path / "pdf"
    root.mkdir()
    for f in sorted(src.glob("*.pdf"))[:2]:
        shutil.copy(f, root / f.name)
    docs = list(iter_sources(root, skipped=[]))
    assert len(docs) == 2 and all(len(d.text) > 5000 for d in docs)
    assert "NIKE" in " ".join(d.text for d in docs) or "Agreement" in docs[0].text
