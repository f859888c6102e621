"""``cairn fields``: define learned fields from a YAML file, extract them with a progress bar,
list them with coverage, suggest fields, and run a queryFields plan (JSON) — SPEC §5.

The CLI acts as the workspace's operator (owner permissions), on the database directly.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import typer

from cairn.app.cli.common import DataDir, WorkspaceOpt, _fail, _open, _progress, _run, _settings, _typer, _workspace

fields_cli = _typer("Learned fields: define, extract, list, suggest, query.")
CollectionOpt = typer.Option(..., "--collection", "-c", help="Collection name.")

YAML_HELP = """A YAML file: `fields:` a list of {name, type (NUMBER MONEY DATE BOOLEAN TEXT DURATION),
description, multiplicity (ONE|MANY), examples}; or `preset: kleister-nda` (effective_date,
jurisdiction, party, term)."""


def _operator(ws_id: str):
    from cairn.app.governance import ROLE_PERMISSIONS, Principal

    return Principal(
        kind="member",
        id="cli",
        workspace_id=ws_id,
        permissions=ROLE_PERMISSIONS["owner"],
        member_id="cli",
        role="owner",
    )


def read_fields_yaml(path: Path):
    """The :class:`app.fields.FieldSpec` s of a fields YAML file (see ``YAML_HELP``).

    Raises:
        BadInput: unreadable, not the shape, an unknown type or multiplicity (naming the entry).
    """
    import yaml

    from cairn.app.core.errors import BadInput
    from cairn.app.fields import KLEISTER_NDA_FIELDS, FieldSpec, FieldType, Multiplicity

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise BadInput(f"{path}: not a readable YAML file ({exc})") from None
    if isinstance(data, dict) and data.get("preset") == "kleister-nda":
        return KLEISTER_NDA_FIELDS
    if not isinstance(data, dict) or not isinstance(data.get("fields"), list):
        raise BadInput(f"{path}: expected `fields:` (a list) or `preset: kleister-nda`")
    out = []
    for i, f in enumerate(data["fields"]):
        where = f"{path.name}: fields[{i}]"
        if not isinstance(f, dict) or "name" not in f or "type" not in f:
            raise BadInput(f"{where}: expected a mapping with name and type")
        unknown = set(f) - {"name", "type", "description", "multiplicity", "examples"}
        if unknown:
            raise BadInput(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        try:
            t = FieldType(str(f["type"]).upper())
        except ValueError:
            raise BadInput(f"{where}.type: {f['type']!r}; one of {' '.join(x.value for x in FieldType)}") from None
        try:
            m = Multiplicity(str(f.get("multiplicity", "ONE")).upper())
        except ValueError:
            raise BadInput(f"{where}.multiplicity: {f.get('multiplicity')!r}; ONE or MANY") from None
        examples = f.get("examples") or []
        if not isinstance(examples, list):
            raise BadInput(f"{where}.examples: expected a list")
        out.append(FieldSpec(str(f["name"]), t, str(f.get("description") or ""), m, tuple(str(e) for e in examples)))
    return tuple(out)


def _with_collection(data_dir, workspace: str, collection: str, action):
    settings = _settings(data_dir, require_store=True)

    async def go():
        from cairn.app.corpus import list_collections

        db, _ = await _open(settings, with_vectors=None)
        try:
            ws = await _workspace(db, workspace, create=False)
            async with db.session() as s:
                colls = {c.name: c for c, _ in await list_collections(s, workspace_id=ws.id)}
            if collection not in colls:
                _fail(f"no collection called {collection!r} in workspace {workspace!r}")
            return await action(SimpleNamespace(db=db, settings=settings), _operator(ws.id), colls[collection].id)
        finally:
            await db.dispose()

    return _run(go())


@fields_cli.command("define")
def define(
    file: Path = typer.Argument(..., help=YAML_HELP),
    collection: str = CollectionOpt,
    replace_all: bool = typer.Option(False, "--replace-all", help="Drop the collection's fields not in the file."),
    workspace: str = WorkspaceOpt,
    data_dir: Path | None = DataDir,
) -> None:
    """Create or replace the collection's fields from a YAML file (then run `cairn fields extract`)."""
    from cairn.app.core.errors import BadInput
    from cairn.app.fields import DefineFieldsRequest, define_fields

    try:
        specs = read_fields_yaml(file)
    except BadInput as exc:
        _fail(exc.message)

    async def action(services, principal, coll_id):
        return await define_fields(services, principal, DefineFieldsRequest(coll_id, specs, replace_all))

    got = _with_collection(data_dir, workspace, collection, action)
    typer.echo(json.dumps({"collection": collection, "fields": [s.name for s in got]}))


async def extract_with_progress(services, principal, collection_id: str, *, force: bool = False):
    """:func:`app.fields.extract_fields` with a documents bar on stderr."""
    from cairn.app.fields import ExtractRequest, extract_fields

    with _progress() as progress:
        task = progress.add_task("fields", total=None)

        def on(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        return await extract_fields(services, principal, ExtractRequest(collection_id, force), progress=on)


@fields_cli.command("extract")
def extract(
    collection: str = CollectionOpt,
    force: bool = typer.Option(False, "--force", help="Re-extract every document, not only new versions."),
    workspace: str = WorkspaceOpt,
    data_dir: Path | None = DataDir,
) -> None:
    """Extract the collection's fields from documents not yet extracted (progress bar on stderr)."""

    async def action(services, principal, coll_id):
        return await extract_with_progress(services, principal, coll_id, force=force)

    r = _with_collection(data_dir, workspace, collection, action)
    typer.echo(json.dumps({"documents": r.documents, "values": r.values, "nulls": r.nulls, "seconds": r.seconds}))


@fields_cli.command("list")
def list_(collection: str = CollectionOpt, workspace: str = WorkspaceOpt, data_dir: Path | None = DataDir) -> None:
    """The collection's fields with coverage, as JSON lines."""
    from cairn.app.fields import FieldsRequest, list_fields

    async def action(services, principal, coll_id):
        return await list_fields(services, principal, FieldsRequest(coll_id))

    for i in _with_collection(data_dir, workspace, collection, action):
        typer.echo(
            json.dumps(
                {
                    "name": i.spec.name,
                    "type": i.spec.type.value,
                    "multiplicity": i.spec.multiplicity.value,
                    "coverage": i.coverage,
                    "documents": i.documents,
                    "withValue": i.with_value,
                    "model": i.model,
                    "labels": i.labels,
                }
            )
        )


@fields_cli.command("suggest")
def suggest(collection: str = CollectionOpt, workspace: str = WorkspaceOpt, data_dir: Path | None = DataDir) -> None:
    """Fields suggested by recurring `Label: value` lines (never applied), as JSON lines."""
    from cairn.app.fields import SuggestRequest, suggest_fields

    async def action(services, principal, coll_id):
        return await suggest_fields(services, principal, SuggestRequest(coll_id))

    for sg in _with_collection(data_dir, workspace, collection, action):
        typer.echo(
            json.dumps(
                {
                    "name": sg.name,
                    "type": sg.type.value,
                    "label": sg.label,
                    "documents": sg.documents,
                    "examples": list(sg.examples),
                },
                ensure_ascii=False,
            )
        )


@fields_cli.command("query")
def query(
    plan: Path = typer.Argument(
        ..., help="A JSON plan: {fields, filters:[{field, op, value}], sort, limit, aggregate, knownAt}."
    ),
    collection: str = CollectionOpt,
    workspace: str = WorkspaceOpt,
    data_dir: Path | None = DataDir,
) -> None:
    """Run a queryFields plan; prints the result as JSON (rows with cited values, groups, coverage lines)."""
    from cairn.app.fields import Aggregate, Filter, Plan, Sort, query_fields

    try:
        raw = json.loads(plan.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        _fail(f"{plan}: not a readable JSON plan ({exc})")

    async def action(services, principal, coll_id):
        agg = raw.get("aggregate")
        p = Plan(
            coll_id,
            tuple(raw.get("fields", ())),
            tuple(Filter(f["field"], f["op"], f.get("value")) for f in raw.get("filters", ())),
            tuple(Sort(x["field"], bool(x.get("descending"))) for x in raw.get("sort", ())),
            int(raw.get("limit", 50)),
            None if not agg else Aggregate(agg["op"], agg.get("field"), agg.get("groupBy")),
            raw.get("knownAt"),
        )
        return await query_fields(services, principal, p)

    r = _with_collection(data_dir, workspace, collection, action)
    out = {
        "matched": r.matched,
        "documents": r.documents,
        "incomplete": r.incomplete,
        "coverageLines": r.coverage_lines,
        "groups": None
        if r.groups is None
        else [{"key": g.key, "documents": g.documents, "value": g.value} for g in r.groups],
        "rows": [
            {
                "externalId": d.external_id,
                "documentId": d.document_id,
                "versionNumber": d.version_number,
                "values": [
                    {
                        "field": v.field,
                        "value": v.value,
                        "citation": None
                        if v.value is None
                        else {"passageId": v.passage_id, "start": v.start, "end": v.end, "sha256": v.sha256},
                        "uncitedReason": v.uncited_reason,
                    }
                    for f in r.fields
                    for v in d.values.get(f, [])
                ],
            }
            for d in r.rows
        ],
    }
    typer.echo(json.dumps(out, ensure_ascii=False))
