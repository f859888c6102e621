from __future__ import annotations

from pathlib import Path

import typer

from cairn.app.cli.common import DataDir, _fail, _open, _run, _settings


def mcp(
    token: str | None = typer.Option(
        None,
        "--token",
        envvar="CAIRN_TOKEN",
        help="Agent credential (ck_…) or member token (cm_…) every tool call runs as; default $CAIRN_TOKEN.",
    ),
    data_dir: Path | None = DataDir,
) -> None:
    """Serve the MCP tools on stdin/stdout (stdio transport) as the given credential.

    Takes the data dir lock like `cairn serve`: beside a running server, use its
    streamable-HTTP endpoint (`POST /mcp`) instead. Loads the models before it answers
    `initialize`, so the first pack does not wait for them. Nothing but MCP messages is
    written to stdout; logs go to stderr.
    """
    if not token:
        _fail("no credential: pass --token ck_… or set CAIRN_TOKEN")
    settings = _settings(data_dir, require_store=True)

    async def go() -> None:
        from cairn.app.context import RequestContext, bootstrap
        from cairn.app.core.logs import configure_logging
        from cairn.app.corpus import warm_models
        from cairn.app.mcp import run_stdio

        configure_logging(settings.log_level)
        db, indexes = await _open(settings)
        services = bootstrap(settings, db=db, indexes=indexes)  # the same Services as `cairn serve`
        try:
            await indexes.index_pending(db)
            # refuse a bad credential at start-up (each call authenticates again)
            await RequestContext(services, {"authorization": f"Bearer {token}"}).principal()
            # load the models before reading the client's `initialize` (as `serve` does before
            # /readyz): else the first packs wait for them and come back incomplete, BM25 only
            await warm_models(indexes)
            await run_stdio(services, token)
        finally:
            indexes.close()
            await db.dispose()

    _run(go(), command="mcp")
