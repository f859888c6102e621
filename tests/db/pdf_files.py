"""PDF files written by hand for the ingest tests (no PDF library writes the odd files they need)."""

from __future__ import annotations

import io


def pdf_file(objects: list[bytes]) -> bytes:
    """A PDF 1.4 file of ``objects`` (object ``n`` is ``objects[n - 1]``; object 1 the catalog)
    with a correct cross-reference table and trailer."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{n} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()
