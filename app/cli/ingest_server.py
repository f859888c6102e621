"""``cairn ingest PATH --server URL``: send a file or folder to a running server, file by file.

The files are chosen as a local ``cairn ingest`` chooses them
(:func:`app.corpus.select_files`: sorted paths, hidden folders and symbolic links passed over,
unsupported types skipped with the same reason, never sent), and each is sent alone to
``POST /v1/documents`` (docs/api.md) with its path relative to the folder as the file name, so
a document gets the same external id either way and a file sent again is ``unchanged``.

The collection is named as locally (``--collection``): looked up with the GraphQL
``collections`` query, and created with ``createCollection`` when missing (which needs an admin
or owner token). The credential is a member token (``cm_…``, ``--token`` or ``$CAIRN_TOKEN``):
uploads are members only, as ``upsertDocument``.

Output: a progress bar and one line per file (status, or skip reason) on stderr, then one
JSON report on stdout ``{server, collection, collectionId, files, ingested, unchanged,
skipped: [{path, reason}], refused: [{path, status, code, message}], seconds}``. Exit codes:
0 every file ingested, unchanged or skipped; 1 a file was refused (413, 400, …: the others are
still sent) or the one file named was skipped; 2 nothing could be sent (bad path, no server,
401/403: the run stops at the first).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import httpx
import typer

from cairn.app.cli.common import _fail, _progress, console

MAX_RATE_LIMIT_WAITS = 5
"""429 answers waited out (``Retry-After``) for one file before it counts as refused."""
UPLOAD_TIMEOUT = httpx.Timeout(30.0, read=600.0)
"""Reading the answer waits for the server to extract, write and index the file (a large PDF)."""


@dataclass
class ServerReport:
    """What one ``--server`` run did, file by file (the JSON report's fields)."""

    ingested: int = 0
    unchanged: int = 0
    skipped: list[dict[str, str | None]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)


def _refusal(resp: httpx.Response) -> tuple[str, str]:
    """``(code, message)`` of an enveloped error answer (or of a non-JSON one)."""
    try:
        err = resp.json()["errors"][0]
        return str(err.get("extensions", {}).get("code", "")), str(err.get("message", ""))
    except (ValueError, KeyError, IndexError, TypeError):
        return "", resp.text[:200]


class _Stopped(Exception):
    """A refusal every later file would get too (401/403): the run stops (exit 2)."""


def _stop(resp: httpx.Response, what: str) -> NoReturn:
    code, message = _refusal(resp)
    raise _Stopped(f"{what}: HTTP {resp.status_code} {code}: {message}")


def _graphql(client: httpx.Client, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    resp = client.post("/graphql", json={"query": query, "variables": variables})
    if resp.status_code != 200 or resp.json().get("errors"):
        _stop(resp, "the server refused the collection lookup")
    return resp.json()["data"]


def _collection_id(client: httpx.Client, collection: str) -> str:
    """The id of the collection named (or with the id) ``collection``, created when missing."""
    rows = _graphql(client, "{collections{id name}}", {})["collections"]
    for row in rows:
        if collection in (row["name"], row["id"]):
            return str(row["id"])
    data = _graphql(client, "mutation($n:String!){createCollection(name:$n){id}}", {"n": collection})
    console.print(f"created collection {collection!r}")
    return str(data["createCollection"]["id"])


def _send(client: httpx.Client, path: Path, rel: str, collection_id: str) -> httpx.Response:
    """One file to ``POST /v1/documents``, waiting out up to :data:`MAX_RATE_LIMIT_WAITS` 429s."""
    for _ in range(MAX_RATE_LIMIT_WAITS):
        with open(path, "rb") as fh:
            resp = client.post(
                "/v1/documents",
                params={"collection": collection_id},
                files=[("file", (rel, fh))],
                timeout=UPLOAD_TIMEOUT,
            )
        if resp.status_code != 429:
            return resp
        wait = min(60.0, float(resp.headers.get("retry-after", "1")))
        console.print(f"rate limited: waiting {wait:.0f} s")
        time.sleep(wait)
    return resp


def _record(report: ServerReport, rel: str, resp: httpx.Response) -> None:
    """Print and count one file's answer."""
    if resp.status_code == 200:
        for r in resp.json()["results"]:
            where = r["externalId"] or rel
            if r["status"] == "skipped":
                report.skipped.append({"path": where, "reason": r["reason"]})
                console.print(f"skipped   {where}: {r['reason']}", soft_wrap=True, highlight=False)
            else:
                setattr(report, r["status"], getattr(report, r["status"]) + 1)
                console.print(f"{r['status']:<9} {where} ({r['passages']} new passages)", highlight=False)
        return
    if resp.status_code in (401, 403):  # every later file would be refused the same
        _stop(resp, f"{rel} refused")
    code, message = _refusal(resp)
    report.refused.append({"path": rel, "status": resp.status_code, "code": code, "message": message})
    console.print(f"refused   {rel}: HTTP {resp.status_code} {code}: {message}", soft_wrap=True, highlight=False)


def ingest_to_server(path: Path, *, collection: str, server: str, token: str | None) -> None:
    """Send ``path`` to the server at ``server`` (module doc); exits with the module's codes."""
    from cairn.app.core.errors import BadInput
    from cairn.app.corpus import SUPPORTED, is_supported, select_files, unsupported_reason

    if not token:
        _fail("no credential: pass --token cm_… (a member token with document:write) or set CAIRN_TOKEN")
    try:
        files, passed_over = select_files(path)
    except BadInput as exc:
        _fail(exc.message)
    report = ServerReport(skipped=[{"path": sk.path, "reason": sk.reason} for sk in passed_over])
    to_send = [(f, rel) for f, rel in files if is_supported(f.name)]
    for f, rel in files:
        if not is_supported(f.name):
            report.skipped.append({"path": rel, "reason": unsupported_reason(f.name)})
    if not to_send:
        _fail(f"{path}: no {SUPPORTED} files found ({len(report.skipped)} skipped)")
    for sk in report.skipped:  # never sent; the server's skips are printed as they come
        console.print(f"skipped   {sk['path']}: {sk['reason']}", soft_wrap=True, highlight=False)
    started = time.perf_counter()
    headers = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=30.0) as client:
            collection_id = _collection_id(client, collection)
            with _progress() as progress:
                bar = progress.add_task(f"upload → {collection}", total=len(to_send))
                for f, rel in to_send:
                    _record(report, rel, _send(client, f, rel, collection_id))
                    progress.advance(bar)
    except httpx.HTTPError as exc:
        _fail(f"cannot reach the server at {server}: {exc}")
    except _Stopped as exc:  # after the progress bar's last line, so the error is the last line
        _fail(str(exc))
    typer.echo(
        json.dumps(
            {
                "server": server,
                "collection": collection,
                "collectionId": collection_id,
                "files": len(to_send),
                "ingested": report.ingested,
                "unchanged": report.unchanged,
                "skipped": report.skipped,
                "refused": report.refused,
                "seconds": round(time.perf_counter() - started, 2),
            },
            ensure_ascii=False,
        )
    )
    single_skipped = Path(path).is_file() and bool(report.skipped)  # a file named alone: refused, as locally
    if report.refused or single_skipped:
        raise typer.Exit(code=1)
