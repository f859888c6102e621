from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from cairn.app.cli.common import (
    DataDir,
    WorkspaceOpt,
    _admin,
    _console,
    _load_ontology,
    _run,
    _settings,
    _typer,
    console,
)

ontology_cli = _typer("Knowledge networks (ontology): load from a mapping, list.")


@ontology_cli.command("load")
def ontology_load(
    mapping: Path = typer.Argument(..., help="Mapping file (.yaml/.json), e.g. app/ontology/northwind.yaml."),
    source_dir: Path | None = typer.Option(
        None, "--source-dir", "-s", help="Directory of the CSV files (csv sources)."
    ),
    workspace: str = WorkspaceOpt,
    data_dir: Path | None = DataDir,
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
def ontology_list(workspace: str = WorkspaceOpt, data_dir: Path | None = DataDir) -> None:
    """Knowledge networks of a workspace with their object types and instance counts."""
    from sqlalchemy import select

    from cairn.app.core.models import KnowledgeNetwork, ObjectType

    async def action(s, ws):
        kns = (await s.execute(select(KnowledgeNetwork).where(KnowledgeNetwork.workspace_id == ws.id))).scalars().all()
        types = (
            (
                await s.execute(
                    select(ObjectType)
                    .where(ObjectType.workspace_id == ws.id)
                    .order_by(ObjectType.kn_id, ObjectType.ot_id)
                )
            )
            .scalars()
            .all()
        )
        return kns, types

    kns, types = _admin(data_dir, action, workspace=workspace)
    table = Table(title=f"knowledge networks of {workspace}")
    for col in ("knId", "name", "generation", "object types (instances)"):
        table.add_column(col)
    for kn in kns:
        parts = ", ".join(f"{t.ot_id} ({t.instance_count})" for t in types if t.kn_id == kn.kn_id)
        table.add_row(kn.kn_id, kn.name, str(kn.generation), parts)
    _console(stderr=False).print(table)
