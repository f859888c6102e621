"""``POST /v1/documents`` (files uploaded to a running server) through the ASGI app in process.

One app for the module (tests/graphql/in_process.py: the same ``create_app``, gate, governance
and handlers as the server, a SQLite database and a Whoosh index, no embedding model, so packs
run on the lexical leg), with small upload limits (64 KiB a file, 256 KiB a request) so that
the limits are reached cheaply. What a real socket adds (``cairn serve`` and ``cairn ingest
--server``) is in tests/cli/test_ingest_server.py.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator

import pytest

from cairn.app.corpus import SUPPORTED
from tests.conftest import shared_data
from tests.graphql.conftest import _bootstrap
from tests.graphql.in_process import InProcess, in_process_app

FILE_LIMIT = 64 * 1024
REQUEST_LIMIT = 256 * 1024
KITCHEN = b"Kitchen notice.\n\nThe kitchen closes at 22:00 on weekdays; the night porter keeps the key."
PACK = "query($i:ContextPackInput!){contextPack(input:$i){items{citation{documentId} externalId}}}"


@pytest.fixture(scope="module")
async def app(tmp_path_factory) -> AsyncIterator[InProcess]:
    """Workspace ``acme``'s members and agents, and an ``uploads`` collection."""
    async with in_process_app(
        tmp_path_factory.mktemp("upload"), upload_max_file_bytes=FILE_LIMIT, upload_max_request_bytes=REQUEST_LIMIT
    ) as a:
        a.tokens, a.ids = await _bootstrap(a.settings.resolved_database_url)
        owner = a.tokens["owner"]
        r = await a.data('mutation{createCollection(name:"uploads"){id}}', None, owner)
        a.ids["coll"] = r["createCollection"]["id"]
        r = await a.data(
            'mutation{createAgentCredential(input:{name:"reader", expiresInDays:1, scopes:["context:read"]}){token}}',
            None,
            owner,
        )
        a.tokens["reader"] = r["createAgentCredential"]["token"]
        yield a


async def upload(app: InProcess, files, token: str | None = "editor", **data):
    headers = {"Authorization": f"Bearer {app.tokens[token]}"} if token else {}
    params = {"collection": data.pop("collection", app.ids["coll"])}
    return await app.client.post("/v1/documents", params=params, files=files, data=data, headers=headers)


def error(resp) -> dict:
    body = resp.json()
    assert body["data"] is None and body["extensions"]["envelope"]["protocol"] == "cairn.envelope.v1"
    return body["errors"][0]["extensions"]


async def pack(app: InProcess, task: str) -> list[str]:
    i = {"task": task, "retrieval": "LEXICAL", "filters": {"collectionIds": [app.ids["coll"]]}}
    items = (await app.data(PACK, {"i": i}, app.tokens["viewer"]))["contextPack"]["items"]
    return [it["citation"]["documentId"] for it in items]


async def test_a_text_and_a_pdf_are_ingested_and_the_next_pack_finds_them(app: InProcess, tmp_path):
    pdfs = shared_data("kleister-nda", "pdf")
    pdf = min(pdfs.glob("*.pdf"), key=lambda f: f.stat().st_size)  # 29 kB: under the module's file limit
    copy = tmp_path / "nda.pdf"
    shutil.copy(pdf, copy)
    r = await upload(
        app, [("file", ("kitchen.md", KITCHEN, "text/markdown")), ("file", ("nda.pdf", copy.read_bytes()))]
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["ingested"], body["unchanged"], body["skipped"]) == (2, 0, 0)
    kitchen, nda = body["results"]
    assert kitchen["fileName"] == "kitchen.md" and kitchen["externalId"] == "kitchen.md"
    assert kitchen["status"] == "ingested" and kitchen["documentId"].startswith("doc_")
    assert kitchen["version"].startswith("ver_") and kitchen["passages"] == 1 and kitchen["reason"] is None
    assert nda["externalId"] == "nda.pdf" and nda["passages"] > 5
    assert r.headers["x-cairn-coordinate"] == "G1.U2.P3.Z2.A1" and r.headers["x-cairn-trace"].startswith("trace_")
    assert (await pack(app, "When does the kitchen close?"))[0] == kitchen["documentId"]
    assert nda["documentId"] in await pack(app, "confidential information disclosure agreement")

    again = (await upload(app, [("file", ("kitchen.md", KITCHEN, "text/markdown"))])).json()
    assert (again["ingested"], again["unchanged"]) == (0, 1)
    (same,) = again["results"]
    assert (same["status"], same["documentId"], same["version"], same["passages"]) == (
        "unchanged",
        kitchen["documentId"],
        kitchen["version"],
        0,
    )


async def test_skips_carry_the_reasons_of_cairn_ingest(app: InProcess):
    files = [
        ("file", ("tool.exe", b"MZ\x90\x00", "application/octet-stream")),
        ("file", ("scan.txt", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "text/plain")),
        ("file", ("blank.txt", b"  \n", "text/plain")),
        ("file", ("rows.csv", b"name,height\nEtna,3357\nFuji,3776,extra\n", "text/csv")),
    ]
    body = (await upload(app, files)).json()
    got = [(r["fileName"], r["status"], r["externalId"], r["reason"]) for r in body["results"]]
    assert got == [
        ("tool.exe", "skipped", "tool.exe", f"unsupported type .exe; supported: {SUPPORTED}"),
        ("scan.txt", "skipped", "scan.txt", "not text: a PDF file (application/pdf)"),
        ("blank.txt", "skipped", "blank.txt", "no text"),
        ("rows.csv", "ingested", "rows.csv#row=1", None),
        ("rows.csv", "skipped", "rows.csv#row=2", "3 cells; the header has 2 columns"),
    ]
    assert (body["ingested"], body["unchanged"], body["skipped"]) == (1, 0, 4)


async def test_external_id_names_the_single_file_and_the_collection_may_be_a_form_field(app: InProcess):
    files = [("file", ("draft.txt", b"Quarterly volcano survey: Etna erupted twice.", "text/plain"))]
    headers = {"Authorization": f"Bearer {app.tokens['editor']}"}
    r = await app.client.post(
        "/v1/documents", files=files, data={"collection": app.ids["coll"], "externalId": "reports/q3"}, headers=headers
    )
    (res,) = r.json()["results"]
    assert (res["fileName"], res["externalId"], res["status"]) == ("draft.txt", "reports/q3", "ingested")


@pytest.mark.parametrize(
    "files,data,field,words",
    [
        ([("file", ("a.txt", b"a")), ("file", ("b.txt", b"b"))], {"externalId": "x"}, "externalId", "exactly one"),
        ([("file", ("a.txt", b"a"))], {"collection": ""}, "collection", "collection is required"),
        ([("file", ("a.jsonl", b'{"_id":"1","text":"t"}\n'))], {"externalId": "x"}, "externalId", "JSONL"),
        ([("file", ("a.txt", b"a")), ("file", ("a.txt", b"b"))], {}, "file", "sent twice"),
        ([("file", ("a.txt", b"a"))], {"colour": "red"}, "colour", "unknown form field 'colour'"),
        ([("upload", ("a.txt", b"a"))], {}, "upload", "a part named 'file'"),
        ([], {"externalId": "x"}, "file", "no file"),
    ],
)
async def test_bad_input_is_refused_naming_the_field(app: InProcess, files, data, field, words):
    if not files:  # httpx sends no multipart body without a file: one text field alone
        headers = {"Authorization": f"Bearer {app.tokens['editor']}"}
        r = await app.client.post(
            "/v1/documents", params={"collection": app.ids["coll"]}, files={"externalId": (None, "x")}, headers=headers
        )
    else:
        r = await upload(app, files, **data)
    assert r.status_code == 400, r.text
    ext = error(r)
    assert (ext["code"], ext["field"]) == ("BAD_USER_INPUT", field)
    assert words in r.json()["errors"][0]["message"]


async def test_refusals_before_the_body_is_read(app: InProcess):
    r = await app.client.post(
        "/v1/documents",
        content=b"{}",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {app.tokens['editor']}"},
    )
    assert (r.status_code, error(r)["code"]) == (415, "BAD_REQUEST")
    r = await upload(app, [("file", ("a.txt", b"a"))], collection="col_missing")
    assert (r.status_code, error(r)["code"]) == (404, "NOT_FOUND")


async def test_credentials_are_those_of_graphql(app: InProcess):
    files = [("file", ("k.txt", KITCHEN))]
    r = await upload(app, files, token=None)
    assert (r.status_code, error(r)["code"]) == (401, "UNAUTHENTICATED")
    assert r.headers["www-authenticate"].startswith("Bearer")
    r = await upload(app, files, token="reader")  # an agent credential: members only, as upsertDocument
    assert (r.status_code, error(r)["code"]) == (403, "AGENT_OPERATION_NOT_ALLOWED")
    r = await upload(app, files, token="viewer")  # no document:write
    assert (r.status_code, error(r)["code"]) == (403, "FORBIDDEN")
    r = await upload(app, files, token="ownerB")  # another workspace's member: not its collection
    assert (r.status_code, error(r)["code"]) == (404, "NOT_FOUND")


class Body:
    """A multipart body sent chunk by chunk, counting what the server pulled."""

    def __init__(self, parts: list[tuple[str, int]], chunk: int = 16 * 1024) -> None:
        self.parts, self.chunk, self.sent = parts, chunk, 0
        self.size = sum(n for _, n in parts)

    async def __aiter__(self):
        for name, n in self.parts:
            head = f'--b0undary\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n\r\n'.encode()
            self.sent += len(head)
            yield head
            for start in range(0, n, self.chunk):
                piece = b"x" * min(self.chunk, n - start)
                self.sent += len(piece)
                yield piece
            self.sent += 2
            yield b"\r\n"
        yield b"--b0undary--\r\n"


def _stream_headers(app: InProcess, **extra: str) -> dict[str, str]:
    return {
        "Content-Type": "multipart/form-data; boundary=b0undary",
        "Authorization": f"Bearer {app.tokens['editor']}",
        **extra,
    }


async def test_an_oversize_file_is_refused_while_it_streams_in(app: InProcess):
    body = Body([("big.txt", 10_000_000)])
    r = await app.client.post(
        "/v1/documents", params={"collection": app.ids["coll"]}, content=body, headers=_stream_headers(app)
    )
    assert r.status_code == 413, r.text
    ext = error(r)
    assert (ext["code"], ext["field"], ext["limit"]) == ("BAD_USER_INPUT", "file", FILE_LIMIT)
    assert "CAIRN_UPLOAD_MAX_FILE_BYTES" in r.json()["errors"][0]["message"]
    assert body.sent < FILE_LIMIT + 3 * body.chunk  # refused at the chunk past the limit, not at the end


async def test_an_oversize_request_is_refused_from_its_length_or_while_it_streams(app: InProcess):
    declared = Body([("a.txt", 10)])
    headers = _stream_headers(app, **{"Content-Length": str(REQUEST_LIMIT + 1)})
    r = await app.client.post(
        "/v1/documents", params={"collection": app.ids["coll"]}, content=declared, headers=headers
    )
    assert (r.status_code, error(r)["limit"]) == (413, REQUEST_LIMIT)
    assert declared.sent == 0  # refused from the header: nothing read
    many = Body([(f"f{i}.txt", 60_000) for i in range(10)])  # each under the file limit, 600 kB in all
    r = await app.client.post(
        "/v1/documents", params={"collection": app.ids["coll"]}, content=many, headers=_stream_headers(app)
    )
    assert (r.status_code, error(r)["limit"]) == (413, REQUEST_LIMIT)
    assert "CAIRN_UPLOAD_MAX_REQUEST_BYTES" in r.json()["errors"][0]["message"]
    assert REQUEST_LIMIT < many.sent < REQUEST_LIMIT + 3 * many.chunk


async def test_a_cut_body_is_refused(app: InProcess):
    async def cut():
        yield b'--b0undary\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhalf a file'

    r = await app.client.post(
        "/v1/documents", params={"collection": app.ids["coll"]}, content=cut(), headers=_stream_headers(app)
    )
    assert (r.status_code, error(r)["code"]) == (400, "BAD_REQUEST")
    assert "closing boundary" in r.json()["errors"][0]["message"]


async def test_uploads_count_against_the_writes_rate_limit(tmp_path):
    """One call of the ``writes`` class per request: with 1 a minute, the editor's second upload
    is refused 429 ``RATE_LIMITED`` with ``Retry-After`` (the owner's createCollection counts
    against the owner, not the editor)."""
    async with in_process_app(tmp_path, rate_limit_writes_per_minute=1) as a:
        a.tokens, a.ids = await _bootstrap(a.settings.resolved_database_url)
        a.ids["coll"] = (await a.data('mutation{createCollection(name:"limited"){id}}', None, a.tokens["owner"]))[
            "createCollection"
        ]["id"]
        first = await upload(a, [("file", ("a.txt", b"Scoria is a dark volcanic rock."))])
        assert first.status_code == 200, first.text
        second = await upload(a, [("file", ("b.txt", b"Tuff is consolidated volcanic ash."))])
        assert (second.status_code, error(second)["code"]) == (429, "RATE_LIMITED")
        assert int(second.headers["retry-after"]) >= 1
