"""The ``cairn`` command (typer): serve, mcp, demo, ingest, reindex, backup, restore, migrate, and
identity admin.

The CLI is the operator's tool on the server machine: it talks to the database directly
(no bearer token). Commands that open the indexes (``serve``, ``ingest``, ``reindex``,
``demo``, ``mcp``) take the data dir's process lock (:mod:`app.core.datadir`): a second one on
the same data dir stops at once with one line naming the holder and what that command can do
instead (:data:`app.cli.common.DATA_DIR_ALTERNATIVES`: `ingest --server` sends the files to the server,
``POST /mcp`` for ``mcp``, …). Commands that only read or change existing rows refuse a data dir
without a store (a mistyped ``--data-dir`` must not create an empty one).

Output: errors are one plain line on stderr (``error: …``, exit code 2), never wrapped or
boxed whatever the terminal width; results are JSON on stdout; progress and tables go to
stderr (at a fixed width when stderr is not a terminal).
"""

from __future__ import annotations

from cairn.app.cli import (
    backup,
    credentials,
    database,
    demo,
    documents,
    fields,
    ingest,
    mcp,
    members,
    memory,
    ontology,
    serve,
    sets,
    templates,
    workspaces,
)
from cairn.app.cli.common import cli

# The command tree, in the order `cairn --help` lists it.
cli.add_typer(workspaces.workspaces_cli, name="workspaces")
cli.add_typer(members.members_cli, name="members")
cli.add_typer(credentials.credentials_cli, name="credentials")
cli.add_typer(ontology.ontology_cli, name="ontology")
cli.add_typer(memory.memory_cli, name="memory")
cli.add_typer(documents.documents_cli, name="documents")
cli.add_typer(fields.fields_cli, name="fields")
cli.add_typer(sets.sets_cli, name="sets")
cli.add_typer(templates.templates_cli, name="templates")
cli.command()(database.migrate)
cli.command()(ingest.ingest)
cli.command()(ingest.reindex)
cli.command()(backup.backup)
cli.command()(backup.restore)
cli.command()(serve.serve)
cli.command()(mcp.mcp)
cli.command()(demo.demo)


def main() -> None:
    """Console-script entry point."""
    cli()


__all__ = ["cli", "main"]
