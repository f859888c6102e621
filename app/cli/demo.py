"""The README's first pack: a workspace, tokens and a sample corpus that exists everywhere.

The sample corpus is Python's own reference documentation as shipped with every CPython
(``pydoc_data.topics``: 79 topics, ~465k characters), so the demo needs neither
``../shared`` nor the network.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer
from sqlalchemy import select
from sqlmodel import col

from cairn.app import identity
from cairn.app.cli.common import (
    DatabaseOnly,
    DataDir,
    _fail,
    _load_ontology,
    _progress,
    _run,
    _serve,
    _settings,
    console,
    data_dir_in_use,
)
from cairn.app.cli.templates import template_demo_query
from cairn.app.core.config import Settings
from cairn.app.core.models import AgentCredential, Member
from cairn.app.corpus import IngestReport, SourceDocument, ingest_documents
from cairn.app.governance import ROLE_PERMISSIONS, Principal, capabilities_for_scopes, issue_token

DEMO_OWNER = "demo-owner"
DEMO_AGENT = "demo-agent"
DEMO_COLLECTION = "python-docs"
DEMO_SCOPES = ["context:read", "queries:run", "replay:run"]
DEMO_SET = "Python statements (demo)"


def demo_context_set() -> dict:
    """The demo's context set (issue 13) in the ``cairn sets import`` YAML shape: a few
    definitions, one verified answer and one instruction over the Python reference."""
    with_doc = {"collection": DEMO_COLLECTION, "externalId": "pydoc/with"}
    return {
        "sets": [
            {
                "name": DEMO_SET,
                "description": "Approved answers and terms for Python's compound statements",
                "scope": {"collections": [DEMO_COLLECTION]},
                "definitions": [
                    {
                        "term": "context manager",
                        "definition": "An object that defines __enter__() and __exit__() to set up and tear down "
                        "the runtime context of a with statement.",
                        "aliases": ["context managers"],
                    },
                    {
                        "term": "suite",
                        "definition": "The block of statements controlled by a clause of a compound statement.",
                    },
                    {
                        "term": "decorator",
                        "definition": "A function returning another function, applied with the @wrapper syntax.",
                    },
                ],
                "verifiedAnswers": [
                    {
                        "question": "How does a with statement call __enter__ and __exit__?",
                        "answer": "The with statement evaluates the context expression to get a context manager, "
                        "calls its __enter__() (binding the result to the as-target, if any), runs the suite, "
                        "then always calls __exit__() — with the exception's type, value and traceback if the "
                        "suite raised, else with three None arguments.",
                        "citation": {"document": with_doc},
                    }
                ],
                "instructions": ["Quote the Python reference section you rely on, with its citation."],
            }
        ]
    }


def sample_documents() -> list[SourceDocument]:
    """Python's reference topics (``pydoc_data.topics``), one document per topic, sorted."""
    from pydoc_data.topics import topics

    return [
        SourceDocument(external_id=f"pydoc/{name}", title=f"Python reference: {name}", text=text)
        for name, text in sorted(topics.items())
        if text.strip()
    ]


@dataclass
class DemoInfo:
    """What the demo prints: tokens (shown once), ids and the ingest report."""

    workspace_id: str
    member_token: str
    agent_token: str
    collection: str
    report: IngestReport
    context_set_id: str = ""


async def prepare_demo(settings: Settings, *, progress_factory=None) -> DemoInfo:
    """Migrate, create or reuse the demo workspace/owner, rotate tokens, ingest the sample."""
    from cairn.app.cli.common import _open, _workspace

    db, indexes = await _open(settings)
    try:
        ws = await _workspace(db, "default")
        async with db.session() as s:
            owner = (
                await s.execute(select(Member).where(col(Member.workspace_id) == ws.id, col(Member.name) == DEMO_OWNER))
            ).scalar_one_or_none()
            if owner is None:
                owner, issued = await identity.create_member(s, workspace_id=ws.id, name=DEMO_OWNER, role="owner")
                member_token = issued.token
            else:
                token_id, sha, member_token = issue_token("cm")
                owner.token_id, owner.token_sha256 = token_id, sha
                s.add(owner)
            for old in (
                await s.execute(
                    select(AgentCredential).where(
                        AgentCredential.workspace_id == ws.id,
                        col(AgentCredential.name) == DEMO_AGENT,
                        col(AgentCredential.revoked_at).is_(None),
                    )
                )
            ).scalars():
                await identity.revoke_credential(s, workspace_id=ws.id, credential_id=old.id)
            principal = Principal(
                kind="member",
                id=owner.id,
                workspace_id=ws.id,
                permissions=ROLE_PERMISSIONS["owner"],
                member_id=owner.id,
                role="owner",
            )
            _cred, agent = await identity.create_credential(
                s,
                creator=principal,
                name=DEMO_AGENT,
                scopes=DEMO_SCOPES,
                expires_in_days=30,
                default_capabilities=capabilities_for_scopes(set(DEMO_SCOPES)),
            )
        docs = sample_documents()
        if progress_factory is None:
            report = await ingest_documents(
                db,
                indexes,
                workspace_id=ws.id,
                collection=DEMO_COLLECTION,
                documents=iter(docs),
                chunk_max_tokens=settings.chunk_max_tokens,
            )
        else:
            from cairn.app.cli.common import ingest_with_progress

            with progress_factory() as progress:
                report = await ingest_with_progress(
                    progress,
                    db,
                    indexes,
                    workspace_id=ws.id,
                    collection=DEMO_COLLECTION,
                    docs=docs,
                    chunk_max_tokens=settings.chunk_max_tokens,
                )
        from cairn.app.contextsets import import_context_sets

        [(_status, demo_set)] = await import_context_sets(DatabaseOnly(db), principal, demo_context_set())
        return DemoInfo(ws.id, member_token, agent.token, DEMO_COLLECTION, report, demo_set.id)
    finally:
        indexes.close()
        await db.dispose()


EXAMPLE_QUERY = """query {
  contextPack(input: {task: "How does a with statement call __enter__ and __exit__?",
                      budget: {maxTokens: 1200}}) {
    packId replayId tokensUsed truncated latencyMs
    items { rank score tokens trust text
            ranks { lexical dense }
            citation { documentId versionId passageId start end sha256 } }
  }
}"""


SET_QUERY = """query {
  contextPack(input: {task: "How does a with statement call __enter__ and __exit__ on a context manager?",
                      contextSetId: "%s", budget: {maxTokens: 1200}}) {
    tokensUsed notes timings { firstSetItemMs firstEvidenceItemMs }
    items { rank kind trust tokens text
            contextSetEntry { entryId setVersion citedDocumentId }
            citation { documentId passageId start end } }
  }
}"""


ONTOLOGY_QUERY = """query {
  semanticRecall(knId: "northwind", query: "seafood suppliers in Scandinavia") {
    nodes { objectTypeId instanceIdentity score matchedBy }
    message
  }
  objectInstances(knId: "northwind", otId: "order", limit: 5,
                  filters: [{field: "ShipCountry", operation: "==", value: "France"},
                            {field: "ShippingStatus", operation: "==", value: "shipped late"}],
                  sort: [{field: "DaysLate", direction: DESC}]) {
    rows totalCount cursor
  }
}"""


def print_demo(info: DemoInfo, *, host: str, port: int, serving: bool = True) -> None:
    """Print the URL, both tokens, a query to paste and curl commands (plain text, never wrapped)."""
    url = f"http://{host}:{port}/graphql"
    r = info.report
    body = (
        '{"query":"{ contextPack(input:{task:\\"What does the global statement do?\\", budget:{maxTokens:600}}) '
        '{ tokensUsed items { rank text citation { documentId start end } } } }"}'
    )
    lines = [
        "",
        f"Cairn demo: {r.documents} documents in '{info.collection}' ({r.created} new, {r.updated} updated, "
        f"{r.unchanged} unchanged; {r.new_passages} new passages)",
        "",
        f"GraphiQL: {url}",
        "In GraphiQL's Headers tab paste (a member token; browsers may use it):",
        f'  {{"Authorization": "Bearer {info.member_token}"}}',
        f"Console: http://{host}:{port}/console (sign in with the same member token)",
        "",
        "Then run this query:",
        "",
        EXAMPLE_QUERY,
        "",
        f"Context set '{DEMO_SET}' ({info.context_set_id}): its approved items (trust APPROVED: the verified",
        "answer, then the definitions the task uses, then the instruction) come first, then evidence:",
        "",
        SET_QUERY % info.context_set_id,
        "",
        "Agent credential (for servers and scripts; shown once):",
        f"  export CAIRN_AGENT_TOKEN={info.agent_token}",
        f"  curl -s {url} -H \"Authorization: Bearer $CAIRN_AGENT_TOKEN\" -H 'Content-Type: application/json' -d '{body}'",
        "The same call with a browser's Origin header is refused (403 AGENT_BROWSER_REQUEST_REFUSED):",
        f"  curl -s {url} -H 'Origin: https://example.com' -H \"Authorization: Bearer $CAIRN_AGENT_TOKEN\" "
        f"-H 'Content-Type: application/json' -d '{body}'",
        "Streamed as NDJSON:",
        f'  curl -sN http://{host}:{port}/v1/context-packs/stream -H "Authorization: Bearer $CAIRN_AGENT_TOKEN" '
        '-H \'Content-Type: application/json\' -d \'{"task":"What does the global statement do?","budget":{"maxTokens":600}}\'',
        "",
    ]
    if serving:
        lines.append("Serving; press Ctrl+C to stop.")
    else:
        lines.append(
            f"Not serving (--no-serve): the URLs and commands above answer once `.venv/bin/cairn serve --port {port}` "
            "(or `./scripts/demo` without --no-serve) runs on this data dir."
        )
    print("\n".join(lines), flush=True)


async def _template_demo(settings: Settings, csv_dir: Path, workspace_id: str):
    from cairn.app.cli.templates import prepare_template_demo
    from cairn.app.core.db import Database

    db = Database(settings.resolved_database_url)
    try:
        async with db.session() as s:
            owner = (
                await s.execute(
                    select(Member).where(col(Member.workspace_id) == workspace_id, col(Member.name) == DEMO_OWNER)
                )
            ).scalar_one()
    finally:
        await db.dispose()
    return await prepare_template_demo(settings, csv_dir, workspace_id, owner.id)


def demo(
    host: str = typer.Option("127.0.0.1"),
    port: int = typer.Option(8000, min=1, max=65535, help="Port (1-65535)."),
    data_dir: Path | None = DataDir,
    no_serve: bool = typer.Option(False, "--no-serve", help="Prepare and print, but do not serve."),
    northwind: Path | None = typer.Option(
        None,
        "--northwind",
        help="Also load the Northwind knowledge network from this CSV directory (e.g. ../shared/data/northwind/csv), "
        "and build a Northwind business database with one approved query template.",
    ),
) -> None:
    """The main job on the embedded default: ingest Python's own docs, print tokens, serve GraphiQL."""
    from cairn.app.core.datadir import DataDirInUse, DataDirLock

    settings = _settings(data_dir)
    try:
        lock = DataDirLock(settings.data_dir)  # held from the ingest through serving
    except DataDirInUse as exc:
        _fail(data_dir_in_use(exc, "demo"))
    try:
        info = _run(prepare_demo(settings, progress_factory=_progress), command="demo")
        if northwind is not None:
            mapping = Path(__file__).resolve().parents[1] / "ontology" / "northwind.yaml"
            report = _run(_load_ontology(settings, mapping, northwind, "default"))
            console.print(
                f"knowledge network northwind: {sum(report.instances.values())} instances of "
                f"{len(report.instances)} object types"
            )
            settings, set_id, template_id = _run(_template_demo(settings, northwind, info.workspace_id))
        print_demo(info, host=host, port=port, serving=not no_serve)
        if northwind is not None:
            print("Knowledge network (Northwind), in GraphiQL:\n\n" + ONTOLOGY_QUERY + "\n", flush=True)
            print(
                "Query template (approved SQL over the Northwind business database; agents never see the SQL):\n\n"
                + template_demo_query(set_id, template_id)
                + "\n",
                flush=True,
            )
        if not no_serve:
            _serve(settings, host=host, port=port)
    finally:
        lock.release()
