"""``POST /v1/documents``: files uploaded to a running server, ingested as ``cairn ingest`` does.

Request (``multipart/form-data``): ``collection`` (the collection id, as a query parameter or a
form field), one or more parts named ``file`` (the document's name is the part's
``filename``), and ``externalId`` (form field) only with exactly one file. Answer 200
``application/json``::

    {"results": [{"fileName", "status": "ingested"|"unchanged"|"skipped", "documentId",
                  "externalId", "version", "passages", "reason"}],
     "ingested": n, "unchanged": n, "skipped": n}

Checks, in order (:func:`~app.http.routes.governed_route`): a content type other than
``multipart/form-data`` with a boundary (415) and a declared ``Content-Length`` over
``upload_max_request_bytes`` (413) before anything is read; the credential (401/403: the
member permission ``document:write``, members only, as ``upsertDocument``) and the rate limit
(``writes``); then the body is streamed to a temporary folder with every file counted against
``upload_max_file_bytes`` and the body against ``upload_max_request_bytes`` as it arrives
(:mod:`app.http.multipart`), and the files are ingested (:func:`app.corpus.ingest_uploads`).
Refusals are the enveloped JSON errors of the other governed routes (``extensions.code``,
``field``, ``limit``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from cairn.app.context import services_of
from cairn.app.core.errors import BadInput
from cairn.app.corpus import MAX_UPLOAD_FILES, UploadedFile, UploadReport, UploadRequest, ingest_uploads
from cairn.app.http.errors import BodyTooLarge, UnsupportedMediaType
from cairn.app.http.multipart import FormLimits, StreamedForm, multipart_boundary, read_form
from cairn.app.http.routes import HttpCall, governed_route

FIELDS = frozenset({"collection", "externalId"})


def _check_request(request: Request) -> None:
    """Before anything is read: the content type (415) and the declared length (413)."""
    if multipart_boundary(request.headers.get("content-type", "")) is None:
        sent = request.headers.get("content-type", "").split(";")[0].strip() or "(none)"
        raise UnsupportedMediaType(
            f"content type {sent!r} is not supported; send the files as multipart/form-data (parts named 'file')"
        )
    limit = services_of(request.scope).settings.upload_max_request_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(
            f"request body of {int(declared):,} bytes is over {limit:,} bytes (CAIRN_UPLOAD_MAX_REQUEST_BYTES)",
            limit=limit,
        )


def _arguments(request: Request, raw: bytes, body: Any) -> dict[str, Any]:
    """The operation's arguments: the collection when sent as a query parameter (a form field is
    read after the call is authorized, with the body)."""
    return {"collection": request.query_params.get("collection")}


def _single(form: StreamedForm, name: str) -> str | None:
    values = [v for k, v in form.fields if k == name]
    if len(values) > 1:
        raise BadInput(f"form field {name!r} is sent {len(values)} times: send it once", field=name)
    return values[0] if values else None


def upload_request(request: Request, form: StreamedForm) -> UploadRequest:
    """The :class:`~app.corpus.UploadRequest` of a streamed form (``collection`` from the query or
    the form; the rules are :func:`app.corpus.validate_upload_request`'s).

    Raises:
        BadInput: ``collection`` given twice with different values, a field sent twice.
    """
    in_query = request.query_params.getlist("collection")
    in_form = _single(form, "collection")
    if len(in_query) > 1 or (in_query and in_form is not None and in_query[0] != in_form):
        raise BadInput("collection is sent more than once with different values: send it once", field="collection")
    collection = in_query[0] if in_query else in_form
    files = tuple(UploadedFile(name, path) for name, path in form.files)
    return UploadRequest(collection, files, _single(form, "externalId"))


def report_json(report: UploadReport) -> dict[str, Any]:
    """The response body (module doc)."""
    return {
        "results": [
            {
                "fileName": r.file_name,
                "status": r.status,
                "documentId": r.document_id,
                "externalId": r.external_id,
                "version": r.version_id,
                "passages": r.passages,
                "reason": r.reason,
            }
            for r in report.results
        ],
        "ingested": report.count("ingested"),
        "unchanged": report.count("unchanged"),
        "skipped": report.count("skipped"),
    }


def make_documents_route() -> Callable[[Request], Awaitable[Response]]:
    """The ``POST /v1/documents`` endpoint (module doc)."""

    @governed_route("POST /v1/documents", before=_check_request, arguments=_arguments)
    async def route(call: HttpCall) -> Response:
        settings = call.ctx.services.settings
        limits = FormLimits(
            max_file_bytes=settings.upload_max_file_bytes,
            max_request_bytes=settings.upload_max_request_bytes,
            max_files=MAX_UPLOAD_FILES,
            fields=FIELDS,
            file_setting="CAIRN_UPLOAD_MAX_FILE_BYTES",
            request_setting="CAIRN_UPLOAD_MAX_REQUEST_BYTES",
        )
        boundary = multipart_boundary(call.request.headers["content-type"])
        assert boundary is not None  # _check_request
        with tempfile.TemporaryDirectory(prefix="cairn-upload-") as folder:
            form = await read_form(call.request, boundary, Path(folder), limits)
            report = await ingest_uploads(call.ctx.services, call.caller, upload_request(call.request, form))
        return JSONResponse(report_json(report), headers=call.stream_headers)

    return route
