"""The ``cairn`` command (typer): serve, demo, ingest, reindex, migrate, and identity admin.

The CLI is the operator's tool on the server machine: it talks to the database directly
(no bearer token). Commands that open the indexes (``serve``, ``ingest``, ``reindex``,
``demo``) take the data dir's process lock (:mod:`app.datadir`): a second one on the same
data dir stops at once with one line naming the holder; ingest through the running server's
GraphQL mutations instead. Commands that only read or change existing rows refuse a data dir
without a store (a mistyped ``--data-dir`` must not create an empty one).

Output: errors are one plain line on stderr (``error: …``, exit code 2), never wrapped or
boxed whatever the terminal width; results are JSON on stdout; progress and tables go to
stderr (at a fixed width when stderr is not a terminal).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from app.cli_common import (
    _console,
    _fail,
    _open,
    _progress,
    _run,
    _settings,
    _show_version,
    _typer,
    _where,
    _workspace,
    console,
    index_progress,
)
from app.config import Settings


cli = _typer("Cairn: governed context for AI agents over GraphQL.")
workspaces_cli = _typer("Workspaces (tenants).")
members_cli = _typer("Members (humans) and their tokens.")
credentials_cli = _typer("Agent credentials (ck_… tokens).")
cli.add_typer(workspaces_cli, name="workspaces")
cli.add_typer(members_cli, name="members")
cli.add_typer(credentials_cli, name="credentials")
ontology_cli = _typer("Knowledge networks (ontology): load from a mapping, list.")
cli.add_typer(ontology_cli, name="ontology")
memory_cli = _typer("Governed agent memory.")
cli.add_typer(memory_cli, name="memory")


DataDir = typer.Option(None, "--data-dir", help="Embedded data dir (default $CAIRN_DATA_DIR or ./cairn-data).")
WorkspaceOpt = typer.Option("default", "--workspace", "-w", help="Workspace name.")


@cli.callback()
def _main_options(
    _version: bool = typer.Option(False, "--version", "-V", callback=_show_version, is_eager=True,
                                  help="Print the version and exit."),
) -> None:
    """Cairn: governed context for AI agents over GraphQL."""


@cli.command()
def migrate(data_dir: Optional[Path] = DataDir) -> None:
    """Bring the database schema to the newest Alembic revision (creates a new store)."""
    from app.migrate import upgrade_database

    settings = _settings(data_dir)
    upgrade_database(settings.resolved_database_url)
    console.print(f"migrated {_where(settings)}", soft_wrap=True)


def _admin(data_dir: Optional[Path], action, *, workspace: str | None = None, create_workspace: bool = False,
           require_store: bool = True):
    """Run ``await action(session, workspace_row)`` on the database, then close it.

    ``require_store`` (default): refuse a data dir without a store; False for commands that
    create one (``workspaces create``, ``members add``).
    """
    settings = _settings(data_dir, require_store=require_store)

    async def go():
        db, _ = await _open(settings, with_vectors=None)
        try:
            ws = await _workspace(db, workspace, create=create_workspace) if workspace else None
            async with db.session() as s:
                return await action(s, ws)
        finally:
            await db.dispose()

    return _run(go())


def _scan(path: Path):
    """``(documents, skipped files)`` of an ingest source, read before any store is touched."""
    from app.errors import BadInput
    from app.services.ingest import SkippedFile, iter_sources

    skipped: list[SkippedFile] = []
    try:
        return list(iter_sources(path, skipped=skipped)), skipped
    except BadInput as exc:
        _fail(exc.message)


def _check_name(value: str, option: str) -> None:
    """Refuse a bad name given on the command line before any store or file is touched."""
    from app.errors import BadInput
    from app.text_rules import validate_name

    try:
        validate_name(value, option, 120)
    except BadInput as exc:
        _fail(exc.message)


async def _ingest(settings: Settings, docs, skipped, collection: str, workspace: str, lexical_only: bool):
    from app.services.ingest import ingest_documents

    db, indexes = await _open(settings, with_vectors=not lexical_only)
    try:
        ws = await _workspace(db, workspace)
        with _progress() as progress:
            t_docs = progress.add_task("documents", total=len(docs))
            on_index = index_progress(progress)
            report = await ingest_documents(
                db, indexes, workspace_id=ws.id, collection=collection, documents=iter(docs),
                chunk_max_tokens=settings.chunk_max_tokens, skipped=skipped,
                on_document=lambda n: progress.advance(t_docs, n), on_index=on_index,
            )
        return report
    finally:
        if indexes is not None:
            indexes.close()
        await db.dispose()


@cli.command()
def ingest(
    path: Path = typer.Argument(..., help="A file or folder: .txt .md .html .jsonl (BEIR), optionally .gz."),
    collection: str = typer.Option(..., "--collection", "-c", help="Collection name (created if missing)."),
    workspace: str = WorkspaceOpt,
    lexical_only: bool = typer.Option(False, "--lexical-only", help="Skip embeddings now; the next `cairn serve` start-up (or `cairn reindex`) embeds them."),
    data_dir: Optional[Path] = DataDir,
) -> None:
    """Ingest documents (idempotent: unchanged documents are a no-op).

    Prints one JSON report on stdout; every skipped file (unsupported type, binary content
    such as a PDF renamed .txt, no text) is listed with its reason on stderr and in the report.
    """
    _check_name(collection, "--collection")
    settings = _settings(data_dir)
    docs, skipped = _scan(path)
    report = _run(_ingest(settings, docs, skipped, collection, workspace, lexical_only))
    table = Table(title=f"ingest {path} → {collection}")
    for col in ("docs", "created", "updated", "unchanged", "passages+", "bm25+", "vectors+", "skipped", "seconds"):
        table.add_column(col, justify="right")
    table.add_row(*(str(x) for x in (report.documents, report.created, report.updated, report.unchanged,
                                     report.new_passages, report.lexical_indexed, report.vector_indexed,
                                     len(report.skipped), report.seconds)))
    console.print(table)
    for sk in report.skipped:
        typer.echo(f"skipped {sk.path}: {sk.reason}", err=True)
    typer.echo(json.dumps({
        "documents": report.documents, "created": report.created, "updated": report.updated,
        "unchanged": report.unchanged, "newPassages": report.new_passages,
        "lexicalIndexed": report.lexical_indexed, "vectorIndexed": report.vector_indexed,
        "seconds": report.seconds, "skipped": [{"path": sk.path, "reason": sk.reason} for sk in report.skipped],
    }, ensure_ascii=False))


@cli.command()
def reindex(
    lexical_only: bool = typer.Option(False, "--lexical-only", help="Rebuild only the BM25 index (no re-embedding)."),
    data_dir: Optional[Path] = DataDir,
) -> None:
    """Rebuild the Whoosh and Qdrant indexes from SQL."""
    settings = _settings(data_dir, require_store=True)

    async def go():
        db, indexes = await _open(settings, with_vectors=not lexical_only)
        try:
            with _progress() as progress:
                return await indexes.reindex(db, progress=index_progress(progress), vectors=not lexical_only)
        finally:
            indexes.close()
            await db.dispose()

    lex, vec = _run(go())
    console.print(f"reindexed {lex} passages lexically, {vec} as vectors")


@cli.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Bind address."),
    port: int = typer.Option(8000, help="Port."),
    data_dir: Optional[Path] = DataDir,
    migrate_first: bool = typer.Option(True, "--migrate/--no-migrate",
                                       help="Bring the schema to the newest revision before serving "
                                            "(--no-migrate where migrations run as a separate deploy step)."),
) -> None:
    """Serve GraphQL (GraphiQL at /graphql), the NDJSON stream, /healthz and /readyz."""
    _serve(_settings(data_dir), host=host, port=port, migrate_first=migrate_first)


def _serve(settings: Settings, *, host: str, port: int, migrate_first: bool = True) -> None:
    """Hold the data dir lock, check a Qdrant server is reachable, migrate, then run uvicorn."""
    import uvicorn

    from app.datadir import DataDirInUse, DataDirLock
    from app.main import create_app
    from app.migrate import upgrade_database
    from retrieval.client_vectors import check_server
    from retrieval.vectors import VectorStoreUnavailable

    try:
        lock = DataDirLock(settings.data_dir)
    except DataDirInUse as exc:
        _fail(exc.message)
    try:
        if settings.embedder != "none" and settings.resolved_vector_backend == "server":
            try:
                check_server(settings.qdrant_url, api_key=settings.qdrant_api_key)
            except VectorStoreUnavailable as exc:
                _fail(str(exc))
        if migrate_first:
            upgrade_database(settings.resolved_database_url)
        console.print(f"Cairn on http://{host}:{port}/graphql  (data: {_where(settings)})", soft_wrap=True)
        uvicorn.run(create_app(settings), host=host, port=port, log_level="warning", ws="websockets-sansio")
    finally:
        lock.release()


@workspaces_cli.command("create")
def workspaces_create(name: str, non_retaining: bool = typer.Option(False, "--non-retaining"),
                      data_dir: Optional[Path] = DataDir) -> None:
    """Create a workspace."""
    from app.services import identity

    ws = _admin(data_dir, lambda s, _: identity.create_workspace(s, name=name, retaining=not non_retaining),
                require_store=False)
    typer.echo(json.dumps({"id": ws.id, "name": ws.name, "retaining": ws.retaining}))


@workspaces_cli.command("list")
def workspaces_list(data_dir: Optional[Path] = DataDir) -> None:
    """List workspaces (one JSON object per line)."""
    from sqlalchemy import select

    from app.models import Workspace

    async def action(s, _):
        return list((await s.execute(select(Workspace).order_by(Workspace.name))).scalars())

    for ws in _admin(data_dir, action):
        typer.echo(json.dumps({"id": ws.id, "name": ws.name, "retaining": ws.retaining}))


@members_cli.command("list")
def members_list(workspace: str = WorkspaceOpt, data_dir: Optional[Path] = DataDir) -> None:
    """List live members (never their tokens)."""
    from app.services import identity

    for m in _admin(data_dir, lambda s, ws: identity.list_members(s, workspace_id=ws.id), workspace=workspace):
        typer.echo(json.dumps({"memberId": m.id, "name": m.name, "role": m.role}))


@members_cli.command("set-role")
def members_set_role(member_id: str, role: str = typer.Option(..., help="owner | admin | editor | viewer"),
                     workspace: str = WorkspaceOpt, data_dir: Optional[Path] = DataDir) -> None:
    """Change a member's role (their agent credentials act with it from the next call)."""
    from app.services import identity

    m = _admin(data_dir, lambda s, ws: identity.set_member_role(s, workspace_id=ws.id, member_id=member_id, role=role),
               workspace=workspace)
    typer.echo(json.dumps({"memberId": m.id, "name": m.name, "role": m.role}))


@members_cli.command("add")
def members_add(name: str, role: str = typer.Option("viewer", help="owner | admin | editor | viewer"),
                workspace: str = WorkspaceOpt, data_dir: Optional[Path] = DataDir) -> None:
    """Add a member and print their member token (shown once)."""
    from app.services import identity

    member, issued = _admin(data_dir, lambda s, ws: identity.create_member(s, workspace_id=ws.id, name=name, role=role),
                            workspace=workspace, create_workspace=True, require_store=False)
    typer.echo(json.dumps({"memberId": member.id, "role": member.role, "token": issued.token}))


@credentials_cli.command("create")
def credentials_create(
    creator: str = typer.Option(..., "--creator", help="Member id of the creator (owner or admin)."),
    scope: list[str] = typer.Option(None, "--scope", help="Repeatable; default context:read queries:run replay:run."),
    days: int = typer.Option(30, "--days", help="Expiry, 1–365 days."),
    name: str = typer.Option("agent", "--name"),
    data_dir: Optional[Path] = DataDir,
) -> None:
    """Create an agent credential and print its token (shown once)."""
    cred, issued = _admin(data_dir, lambda s, _: _create_credential(s, creator, scope or None, days, name))
    typer.echo(json.dumps({"credentialId": cred.id, "scopes": cred.scopes, "expiresAt": cred.expires_at.isoformat(),
                           "token": issued.token}))


@credentials_cli.command("revoke")
def credentials_revoke(credential_id: str, workspace: str = WorkspaceOpt, data_dir: Optional[Path] = DataDir) -> None:
    """Revoke an agent credential now."""
    from app.services import identity

    cred = _admin(data_dir, lambda s, ws: identity.revoke_credential(s, workspace_id=ws.id, credential_id=credential_id),
                  workspace=workspace)
    typer.echo(json.dumps({"credentialId": cred.id, "revokedAt": cred.revoked_at.isoformat()}))


@credentials_cli.command("list")
def credentials_list(workspace: str = WorkspaceOpt, data_dir: Optional[Path] = DataDir) -> None:
    """List agent credentials (never their secrets), each with its status: ACTIVE, REVOKED,
    EXPIRED or AUTHORITY_LOST (:mod:`app.services.credential_state`) and the scopes its
    creator no longer holds."""
    from app.services import identity
    from app.services.credential_state import credential_states

    async def listed(s, ws):
        creds = await identity.list_credentials(s, workspace_id=ws.id)
        return creds, await credential_states(s, creds)

    creds, states = _admin(data_dir, listed, workspace=workspace)
    for c in creds:
        typer.echo(json.dumps({"credentialId": c.id, "name": c.name, "scopes": c.scopes,
                               "status": states[c.id].status, "lostScopes": list(states[c.id].lost_scopes),
                               "expiresAt": c.expires_at.isoformat(),
                               "revokedAt": c.revoked_at.isoformat() if c.revoked_at else None}))


async def _create_credential(s, creator_id, scopes, days, name):
    from app.auth import DEFAULT_SCOPES, ROLE_PERMISSIONS, Principal
    from app.errors import Forbidden, NotFound
    from app.models import Member
    from app.registry import capabilities_for_scopes
    from app.services import identity

    m = await s.get(Member, creator_id)
    if m is None or m.removed_at is not None:
        raise NotFound(f"no member {creator_id!r}")
    principal = Principal(kind="member", id=m.id, workspace_id=m.workspace_id, permissions=ROLE_PERMISSIONS[m.role],
                          member_id=m.id, role=m.role)
    if "agent_credential:manage" not in principal.permissions:
        raise Forbidden(f"member {m.id} is {m.role}; creating credentials needs admin or owner")
    return await identity.create_credential(
        s, creator=principal, name=name, scopes=scopes, expires_in_days=days,
        default_capabilities=capabilities_for_scopes(set(scopes or DEFAULT_SCOPES)),
    )


def _embedder(settings: Settings):
    """The embedding provider named by settings (no vector store: loads write SQL only)."""
    from retrieval.embeddings import load_embedder

    if settings.embedder == "none":
        return None
    if settings.embedder == "openai":
        return load_embedder("openai", base_url=settings.embedding_url, model=settings.embedding_model,
                             api_key=settings.embedding_api_key)
    return load_embedder("local")


async def _load_ontology(settings: Settings, mapping: Path, source_dir: Optional[Path], workspace: str):
    from app.services.ontology_load import load_network
    from app.services.ontology_mapping import read_mapping_file

    spec = read_mapping_file(mapping)
    db, _ = await _open(settings, with_vectors=None)
    try:
        ws = await _workspace(db, workspace)
        with _progress() as progress:
            tasks: dict[str, int] = {}

            def on_progress(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = progress.add_task(stage, total=total)
                progress.update(tasks[stage], completed=done)

            return await load_network(db, _embedder(settings), workspace_id=ws.id, mapping=spec,
                                      source_dir=source_dir, progress=on_progress)
    finally:
        await db.dispose()


@ontology_cli.command("load")
def ontology_load(
    mapping: Path = typer.Argument(..., help="Mapping file (.yaml/.json), e.g. app/ontology/northwind.yaml."),
    source_dir: Optional[Path] = typer.Option(None, "--source-dir", "-s", help="Directory of the CSV files (csv sources)."),
    workspace: str = WorkspaceOpt,
    data_dir: Optional[Path] = DataDir,
) -> None:
    """Load (or replace) a knowledge network. Safe while `cairn serve` runs: it writes SQL only."""
    settings = _settings(data_dir)

    async def go():
        return await _load_ontology(settings, mapping, source_dir, workspace)

    report = _run(go())
    table = Table(title=f"knowledge network {report.kn_id} (generation {report.generation})")
    table.add_column("object type")
    table.add_column("instances", justify="right")
    for ot_id, n in report.instances.items():
        table.add_row(ot_id, str(n))
    console.print(table)
    console.print(f"embedded {report.embedded} distinct strings with {report.vector_model or 'no model'}")


@ontology_cli.command("list")
def ontology_list(workspace: str = WorkspaceOpt, data_dir: Optional[Path] = DataDir) -> None:
    """Knowledge networks of a workspace with their object types and instance counts."""
    from sqlalchemy import select

    from app.models import KnowledgeNetwork, ObjectType

    async def action(s, ws):
        kns = (await s.execute(select(KnowledgeNetwork).where(KnowledgeNetwork.workspace_id == ws.id))).scalars().all()
        types = (await s.execute(select(ObjectType).where(ObjectType.workspace_id == ws.id)
                                 .order_by(ObjectType.kn_id, ObjectType.ot_id))).scalars().all()
        return kns, types

    kns, types = _admin(data_dir, action, workspace=workspace)
    table = Table(title=f"knowledge networks of {workspace}")
    for col in ("knId", "name", "generation", "object types (instances)"):
        table.add_column(col)
    for kn in kns:
        parts = ", ".join(f"{t.ot_id} ({t.instance_count})" for t in types if t.kn_id == kn.kn_id)
        table.add_row(kn.kn_id, kn.name, str(kn.generation), parts)
    _console(stderr=False).print(table)


@cli.command()
def demo(
    host: str = typer.Option("127.0.0.1"),
    port: int = typer.Option(8000),
    data_dir: Optional[Path] = DataDir,
    no_serve: bool = typer.Option(False, "--no-serve", help="Prepare and print, but do not serve."),
    northwind: Optional[Path] = typer.Option(None, "--northwind", help="Also load the Northwind knowledge network "
                                             "from this CSV directory (e.g. ../shared/data/northwind/csv)."),
) -> None:
    """The main job on the embedded default: ingest Python's own docs, print tokens, serve GraphiQL."""
    from app.datadir import DataDirInUse, DataDirLock
    from app.demo import ONTOLOGY_QUERY, prepare_demo, print_demo

    settings = _settings(data_dir)
    try:
        lock = DataDirLock(settings.data_dir)  # held from the ingest through serving
    except DataDirInUse as exc:
        _fail(exc.message)
    try:
        info = _run(prepare_demo(settings, progress_factory=_progress))
        if northwind is not None:
            mapping = Path(__file__).resolve().parent / "ontology" / "northwind.yaml"
            report = _run(_load_ontology(settings, mapping, northwind, "default"))
            console.print(f"knowledge network northwind: {sum(report.instances.values())} instances of "
                          f"{len(report.instances)} object types")
        print_demo(info, host=host, port=port, serving=not no_serve)
        if northwind is not None:
            print("Knowledge network (Northwind), in GraphiQL:\n\n" + ONTOLOGY_QUERY + "\n", flush=True)
        if not no_serve:
            _serve(settings, host=host, port=port)
    finally:
        lock.release()


@memory_cli.command("purge")
def memory_purge(data_dir: Optional[Path] = DataDir) -> None:
    """Delete memory versions older than their workspace's retention (also runs at start-up)."""
    from app.services.memory import purge_expired

    n = _admin(data_dir, lambda s, _: purge_expired(s))
    typer.echo(json.dumps({"purged": n}))


def main() -> None:
    """Console-script entry point."""
    cli()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
