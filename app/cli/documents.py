"""``cairn documents list``: one page of a collection's live documents, read from the store.

The same service and rules as the GraphQL ``documents(collectionId, first, after)`` query
(:func:`app.corpus.list_documents`): ``externalId`` order, ``--first`` 1–200, ``--after`` the
``endCursor`` of the previous page. SQL only (safe beside a running server). Output: JSON on
stdout ``{collection, collectionId, totalCount, documents: [{id, externalId, title,
mediaType, createdAt}], endCursor, hasNextPage}``; errors one line on stderr, exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import typer

from cairn.app.cli.common import DataDir, WorkspaceOpt, _fail, _open, _run, _settings, _typer, _workspace

documents_cli = _typer("Documents of a collection.")


async def _list(settings, workspace: str, collection: str, first: int, after: str | None):
    from cairn.app.corpus import DocumentListRequest, list_collections, list_documents
    from cairn.app.governance import ROLE_PERMISSIONS, Principal

    db, _ = await _open(settings, with_vectors=None)
    try:
        ws = await _workspace(db, workspace, create=False)
        async with db.session() as s:
            found = [c for c, _n in await list_collections(s, workspace_id=ws.id) if c.name == collection]
        if not found:
            _fail(f"no collection called {collection!r} in workspace {workspace!r}")
        operator = Principal(
            kind="member",
            id="cli",
            workspace_id=ws.id,
            permissions=ROLE_PERMISSIONS["viewer"],
            member_id="cli",
            role="viewer",
        )
        request = DocumentListRequest(collection_id=found[0].id, first=first, after=after)
        return await list_documents(SimpleNamespace(db=db), operator, request)
    finally:
        await db.dispose()


@documents_cli.command("list")
def documents_list(
    collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
    first: int = typer.Option(50, "--first", help="Page size, 1–200."),
    after: str | None = typer.Option(None, "--after", help="endCursor of the previous page."),
    workspace: str = WorkspaceOpt,
    data_dir: Path | None = DataDir,
) -> None:
    """List one page of a collection's live documents (externalId order) as JSON."""
    settings = _settings(data_dir, require_store=True)
    page = _run(_list(settings, workspace, collection, first, after))
    typer.echo(
        json.dumps(
            {
                "collection": collection,
                "collectionId": page.documents[0].collection_id if page.documents else None,
                "totalCount": page.total_count,
                "documents": [
                    {
                        "id": d.id,
                        "externalId": d.external_id,
                        "title": d.title,
                        "mediaType": d.media_type,
                        "createdAt": d.created_at.isoformat(),
                    }
                    for d in page.documents
                ],
                "endCursor": page.end_cursor,
                "hasNextPage": page.has_next_page,
            },
            ensure_ascii=False,
        )
    )
