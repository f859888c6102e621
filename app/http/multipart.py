"""A ``multipart/form-data`` body read as it streams in, each file part written to its own file
and every byte counted against the limits while it arrives (never after the body is buffered).

Starlette's ``request.form()`` spools every file whole and bounds only the text fields
(``max_part_size``), so an oversize file would be read to its end before anyone could refuse
it. :func:`read_form` drives python-multipart's streaming parser (the one Starlette uses)
itself and refuses, as soon as the count passes:

- a file part over ``max_file_bytes`` and a body over ``max_request_bytes``: 413 (``limit``);
- more than ``max_files`` file parts, a text field over ``max_field_bytes``: 400 with ``limit``;
- a part named neither ``file_field`` nor one of ``fields``: 400 naming it (nothing is ignored);
- a body that stops arriving for :data:`app.http.gate.BODY_TIMEOUT_SECONDS`: 408.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from io import BufferedWriter
from pathlib import Path

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import Request

from cairn.app.core.errors import BadInput
from cairn.app.http.errors import BadRequest, BodyTooLarge, RequestTimeout
from cairn.app.http.gate import BODY_TIMEOUT_SECONDS

MAX_PART_HEADER_BYTES = 16 * 1024
"""Header bytes of one part (its ``Content-Disposition`` and ``Content-Type``)."""


@dataclass(frozen=True)
class FormLimits:
    """The bounds of one form (module doc).

    Attributes:
        max_file_bytes / max_request_bytes: Bytes of one file part / of the whole body (413).
        max_files: File parts in one body.
        fields: The names of the text fields accepted (each at most ``max_field_bytes``).
        file_field: The name every file part must have.
    """

    max_file_bytes: int
    max_request_bytes: int
    max_files: int
    fields: frozenset[str]
    file_field: str = "file"
    max_field_bytes: int = 4096
    file_setting: str = "the per-file limit"
    request_setting: str = "the per-request limit"


@dataclass(frozen=True)
class StreamedForm:
    """A form read to its end: text fields ``(name, value)`` and files ``(filename, path of
    the copy)``, each in the order sent."""

    fields: tuple[tuple[str, str], ...]
    files: tuple[tuple[str, Path], ...]


def multipart_boundary(content_type: str) -> bytes | None:
    """The boundary of a ``multipart/form-data`` content type, else None."""
    ctype, options = parse_options_header(content_type)
    if ctype != b"multipart/form-data":
        return None
    return options.get(b"boundary") or None


def _text(raw: bytes, what: str, field: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{what} is not UTF-8", field=field) from None


class _Parts:
    """The parser's callbacks and what they collect, for one body (module doc).

    Files are written under ``folder`` as ``0``, ``1``, … (never under the name sent).
    """

    def __init__(self, folder: Path, limits: FormLimits) -> None:
        self.folder = folder
        self.limits = limits
        self.fields: list[tuple[str, str]] = []
        self.files: list[tuple[str, Path]] = []
        self.ended = False
        self._headers: dict[bytes, bytes] = {}
        self._hname = bytearray()
        self._hvalue = bytearray()
        self._hbytes = 0
        self._name = ""
        self._out: BufferedWriter | None = None
        self._value = bytearray()
        self._size = 0

    def callbacks(self) -> dict[str, object]:
        return {
            "on_part_begin": self.part_begin,
            "on_header_field": self.header_field,
            "on_header_value": self.header_value,
            "on_header_end": self.header_end,
            "on_headers_finished": self.headers_finished,
            "on_part_data": self.part_data,
            "on_part_end": self.part_end,
            "on_end": self.end,
        }

    def close(self) -> None:
        """Close the file being written, if any (after a refusal)."""
        if self._out is not None:
            self._out.close()
            self._out = None

    def part_begin(self) -> None:
        self._headers, self._hbytes, self._size, self._value = {}, 0, 0, bytearray()

    def _count_header(self, n: int) -> None:
        self._hbytes += n
        if self._hbytes > MAX_PART_HEADER_BYTES:
            raise BadRequest(f"a part's headers take more than {MAX_PART_HEADER_BYTES:,} bytes")

    def header_field(self, data: bytes, start: int, end: int) -> None:
        self._count_header(end - start)
        self._hname += data[start:end]

    def header_value(self, data: bytes, start: int, end: int) -> None:
        self._count_header(end - start)
        self._hvalue += data[start:end]

    def header_end(self) -> None:
        self._headers[bytes(self._hname).lower()] = bytes(self._hvalue)
        self._hname, self._hvalue = bytearray(), bytearray()

    def headers_finished(self) -> None:
        disposition, options = parse_options_header(self._headers.get(b"content-disposition", b"").decode("latin-1"))
        if disposition != b"form-data" or b"name" not in options:
            raise BadRequest("every part needs 'Content-Disposition: form-data; name=\"…\"'")
        self._name = _text(options[b"name"], "a part's name", "file")
        lim = self.limits
        if b"filename" in options:
            if self._name != lim.file_field:
                raise BadInput(
                    f"a file was sent in a part named {self._name!r}: send each file as a part named "
                    f"{lim.file_field!r}",
                    field=self._name,
                )
            if len(self.files) >= lim.max_files:
                raise BadInput(f"more than {lim.max_files:,} files in one request", field="file", limit=lim.max_files)
            filename = _text(options[b"filename"], "a file name", "file")
            path = self.folder / str(len(self.files))
            self._out = open(path, "wb")  # noqa: SIM115 - closed at the part's end or by close()
            self.files.append((filename, path))
        elif self._name not in lim.fields:
            names = ", ".join(sorted(lim.fields | {lim.file_field}))
            raise BadInput(f"unknown form field {self._name!r}; the fields are {names}", field=self._name)

    def part_data(self, data: bytes, start: int, end: int) -> None:
        self._size += end - start
        lim = self.limits
        if self._out is not None:
            if self._size > lim.max_file_bytes:
                raise BodyTooLarge(
                    f"file {self.files[-1][0]!r} is over {lim.max_file_bytes:,} bytes ({lim.file_setting})",
                    field="file",
                    limit=lim.max_file_bytes,
                )
            self._out.write(data[start:end])
        else:
            if self._size > lim.max_field_bytes:
                raise BadInput(
                    f"form field {self._name!r} is over {lim.max_field_bytes:,} bytes",
                    field=self._name,
                    limit=lim.max_field_bytes,
                )
            self._value += data[start:end]

    def part_end(self) -> None:
        if self._out is not None:
            self.close()
        else:
            self.fields.append((self._name, _text(bytes(self._value), f"form field {self._name!r}", self._name)))

    def end(self) -> None:
        self.ended = True


async def read_form(request: Request, boundary: bytes, folder: Path, limits: FormLimits) -> StreamedForm:
    """Read a ``multipart/form-data`` body to its end, writing each file part under ``folder``.

    Args:
        boundary: From the content type (:func:`multipart_boundary`).
        folder: An empty folder the caller owns and removes (the files' copies).

    Raises:
        BodyTooLarge: 413, a file or the body past its limit (counted as the bytes arrive).
        BadInput: 400, an unknown field, a text field too long, too many files, a name not UTF-8.
        BadRequest: 400, not well-formed multipart, or cut before its closing boundary.
        RequestTimeout: 408, no bytes for :data:`BODY_TIMEOUT_SECONDS`.
    """
    parts = _Parts(folder, limits)
    parser = MultipartParser(boundary, parts.callbacks())  # type: ignore[arg-type]
    total = 0
    try:
        while True:
            try:
                async with asyncio.timeout(BODY_TIMEOUT_SECONDS):
                    message = await request.receive()
            except TimeoutError:
                raise RequestTimeout(
                    f"the request body stopped arriving for {BODY_TIMEOUT_SECONDS:.0f} s", limit=BODY_TIMEOUT_SECONDS
                ) from None
            if message["type"] == "http.disconnect":
                raise BadRequest("the client disconnected before the body ended")
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > limits.max_request_bytes:
                raise BodyTooLarge(
                    f"request body is over {limits.max_request_bytes:,} bytes ({limits.request_setting})",
                    limit=limits.max_request_bytes,
                )
            if chunk:
                parser.write(chunk)
            if not message.get("more_body", False):
                break
        parser.finalize()
    except MultipartParseError as exc:
        raise BadRequest(f"the body is not well-formed multipart/form-data ({exc})") from None
    finally:
        parts.close()
    if not parts.ended:
        raise BadRequest("the multipart body ended before its closing boundary")
    return StreamedForm(tuple(parts.fields), tuple(parts.files))
