"""``cairn ingest PATH --server URL`` against a real ``cairn serve`` process (one for the module).

The server runs without an embedding model (packs on the lexical leg) and with small upload
limits (200,000 bytes a file, 400,000 a request), so the refusals over a real socket are cheap:
a file over the request limit is refused from its ``Content-Length`` before its body is read,
one between the two limits while it streams in. The route's own rules are tested in process
(tests/graphql/test_document_upload.py).
"""

from __future__ import annotations

import json
import re
import shutil
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cairn.app.corpus import SUPPORTED
from tests import local_http
from tests.conftest import SHARED_DATA
from tests.db.cli_processes import Server
from tests.db.test_cli import cairn

pytestmark = pytest.mark.slow  # starts `cairn serve`

FILE_LIMIT = 200_000
REQUEST_LIMIT = 400_000
PACK = "query($i:ContextPackInput!){contextPack(input:$i){items{externalId citation{documentId}}}}"


@dataclass
class Live:
    server: Server
    tokens: dict[str, str]
    collection_id: str


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> Iterator[Live]:
    """``cairn serve`` on a data dir with an owner, an editor and a ``context:read`` agent."""
    tmp = tmp_path_factory.mktemp("ingest-server")
    data = tmp / "data"
    owner = json.loads(cairn("members", "add", "olga", "--role", "owner", data_dir=data).stdout)
    editor = json.loads(cairn("members", "add", "ed", "--role", "editor", data_dir=data).stdout)
    agent = json.loads(
        cairn("credentials", "create", "--creator", owner["memberId"], "--scope", "context:read", data_dir=data).stdout
    )
    server = Server(
        tmp,
        data,
        CAIRN_EMBEDDER="none",
        CAIRN_UPLOAD_MAX_FILE_BYTES=str(FILE_LIMIT),
        CAIRN_UPLOAD_MAX_REQUEST_BYTES=str(REQUEST_LIMIT),
    )
    try:
        server.wait_ready()
        made = server.graphql('mutation{createCollection(name:"notes"){id}}', {}, owner["token"])
        tokens = {"owner": owner["token"], "editor": editor["token"], "agent": agent["token"]}
        yield Live(server, tokens, made["createCollection"]["id"])
    finally:
        server.stop()


def send(live: Live, path: Path, who: str = "editor", collection: str = "notes"):
    return cairn(
        "ingest",
        str(path),
        "-c",
        collection,
        "--server",
        live.server.url,
        data_dir=None,
        env={"CAIRN_TOKEN": live.tokens[who]},
    )


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "kitchen.txt").write_text("The kitchen closes at 22:00 on weekdays; the night porter keeps the key.")
    (root / "sub" / "boiler.md").write_text("# Boiler\n\nThe boiler room is on level minus two, behind the laundry.")
    (root / "tool.exe").write_bytes(b"MZ\x90\x00")
    pdfs = SHARED_DATA / "kleister-nda" / "pdf"
    if pdfs.is_dir():  # optional here: the route's PDF test requires it (tests/graphql/test_document_upload.py)
        shutil.copy(min(pdfs.glob("*.pdf"), key=lambda f: f.stat().st_size), root / "nda.pdf")
    return root


def test_a_folder_goes_to_the_running_server_and_the_next_pack_finds_it(live: Live, tmp_path):
    root = _folder(tmp_path)
    has_pdf = (root / "nda.pdf").exists()
    r = send(live, root)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert (report["files"], report["ingested"], report["unchanged"], report["refused"]) == (
        2 + has_pdf,
        2 + has_pdf,
        0,
        [],
    )
    assert report["skipped"] == [
        {"path": ".git/", "reason": "hidden folder, not read (1 file)"},
        {"path": "tool.exe", "reason": f"unsupported type .exe; supported: {SUPPORTED}"},
    ]
    assert "ingested  sub/boiler.md (1 new passages)" in r.stderr and "skipped   tool.exe" in r.stderr
    resp = local_http.post(
        f"{live.server.url}/graphql",
        json={"query": PACK, "variables": {"i": {"task": "Where is the boiler room?", "retrieval": "LEXICAL"}}},
        headers={"Authorization": f"Bearer {live.tokens['agent']}"},
        timeout=60,
    )
    items = resp.json()["data"]["contextPack"]["items"]
    assert items[0]["externalId"] == "sub/boiler.md"  # the path relative to the folder, as `cairn ingest`
    again = json.loads(send(live, root).stdout)
    assert (again["ingested"], again["unchanged"]) == (0, 2 + has_pdf)


def test_refused_files_make_a_non_zero_exit_and_the_others_still_go(live: Live, tmp_path):
    root = tmp_path / "mixed"
    root.mkdir()
    (root / "a-huge.txt").write_text("lava " * 100_000)  # 500 kB: over the request limit (Content-Length)
    (root / "b-big.txt").write_text("ash " * 60_000)  # 240 kB: over the file limit, refused as it streams
    (root / "c-small.txt").write_text("Pumice floats on water.")
    r = send(live, root)
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    refused = {x["path"]: (x["status"], x["code"]) for x in report["refused"]}
    assert refused == {"a-huge.txt": (413, "BAD_USER_INPUT"), "b-big.txt": (413, "BAD_USER_INPUT")}
    assert "CAIRN_UPLOAD_MAX_REQUEST_BYTES" in report["refused"][0]["message"]
    assert "CAIRN_UPLOAD_MAX_FILE_BYTES" in report["refused"][1]["message"]
    assert report["ingested"] == 1


def test_a_context_read_credential_is_refused_with_its_code(live: Live, tmp_path):
    (tmp_path / "a.txt").write_text("Obsidian is volcanic glass.")
    r = send(live, tmp_path / "a.txt", who="agent")
    assert r.returncode == 2
    assert "HTTP 403 AGENT_OPERATION_NOT_ALLOWED" in r.stderr.splitlines()[-1]


def test_an_oversize_upload_is_answered_413_before_its_body_ends(live: Live):
    """Over a raw socket: 300 kB of a file part (over the 200,000-byte file limit) sent chunked,
    then nothing more: the 413 arrives although the body never ended (nothing waits for it)."""
    head = (
        f"POST /v1/documents?collection={live.collection_id} HTTP/1.1\r\nHost: cairn\r\n"
        f"Authorization: Bearer {live.tokens['editor']}\r\n"
        "Content-Type: multipart/form-data; boundary=bb\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    part = b'--bb\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\n\r\n' + b"x" * 300_000
    with socket.create_connection(("127.0.0.1", live.server.port), timeout=30) as s:
        s.sendall(head + f"{len(part):x}\r\n".encode() + part + b"\r\n")
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += s.recv(65536)
        head, _, body = answer.partition(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))
        while len(body) < length:
            body += s.recv(65536)
    assert head.split(b"\r\n")[0] == b"HTTP/1.1 413 Request Entity Too Large"
    body = json.loads(body)
    assert body["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT", "field": "file", "limit": FILE_LIMIT}
