"""Template definitions in YAML (``templates: [{name, description, parameters, sql, maxRows?}]``).

:data:`NORTHWIND_TEMPLATES` is the bundled file of ten Northwind templates the demo and the
tests use. A definition is checked here (name, description, declarations, SQL size); the SQL
rules are checked when an admin approves (:mod:`app.templates.approval`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import require_storable
from cairn.app.templates.approval import MAX_SQL_LENGTH
from cairn.app.templates.errors import QueryTemplateInvalid
from cairn.app.templates.params import ParameterSpec, parse_specs

NORTHWIND_TEMPLATES = Path(__file__).with_name("northwind.yaml")
TEMPLATE_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
MAX_DESCRIPTION = 1_000
MAX_ROWS_LIMIT = 100_000


@dataclass(frozen=True)
class TemplateDefinition:
    """A template as written by an admin (before approval).

    Attributes:
        name: ``[a-z][a-z0-9_]{0,63}``, unique within its context set.
        description: What it answers (≤ 1,000 characters); shown to agents.
        sql: One SELECT with named ``:param`` placeholders (≤ 20,000 characters).
        parameters: The declarations (:mod:`app.templates.params`).
        max_rows: Row cap of this template (≤ the server's ``templates_max_rows``), or None.
    """

    name: str
    description: str
    sql: str
    parameters: tuple[ParameterSpec, ...]
    max_rows: int | None = None


def definition_from_json(raw: Any, field: str = "input") -> TemplateDefinition:
    """Check one definition object (camelCase keys) and build it.

    Raises:
        BadInput: naming the key (``<field>.name``, ``<field>.parameters[1].max`` …) and the limit.
    """
    if not isinstance(raw, dict):
        raise BadInput(f"{field} must be an object with name, description, parameters and sql", field=field)
    unknown = sorted(set(raw) - {"name", "description", "parameters", "sql", "maxRows"})
    if unknown:
        raise BadInput(f"{field}: unknown key(s) {unknown}", field=field)
    name = raw.get("name")
    if not isinstance(name, str) or not TEMPLATE_NAME_RE.match(name):
        raise QueryTemplateInvalid(
            f"{field}.name must match {TEMPLATE_NAME_RE.pattern}; got {name!r}", field=f"{field}.name"
        )
    description = raw.get("description") or ""
    require_storable(description, f"{field}.description")
    if len(description) > MAX_DESCRIPTION:
        raise BadInput(
            f"{field}.description is {len(description)} characters; at most {MAX_DESCRIPTION}",
            field=f"{field}.description",
            limit=MAX_DESCRIPTION,
        )
    sql = require_storable(raw.get("sql"), f"{field}.sql")
    if not sql.strip() or len(sql) > MAX_SQL_LENGTH:
        raise BadInput(
            f"{field}.sql must be 1–{MAX_SQL_LENGTH:,} characters", field=f"{field}.sql", limit=MAX_SQL_LENGTH
        )
    max_rows = raw.get("maxRows")
    if max_rows is not None and (
        not isinstance(max_rows, int) or isinstance(max_rows, bool) or not 1 <= max_rows <= MAX_ROWS_LIMIT
    ):
        raise BadInput(
            f"{field}.maxRows must be an integer 1–{MAX_ROWS_LIMIT:,}", field=f"{field}.maxRows", limit=MAX_ROWS_LIMIT
        )
    return TemplateDefinition(
        name=name,
        description=description,
        sql=sql,
        parameters=parse_specs(raw.get("parameters"), f"{field}.parameters"),
        max_rows=max_rows,
    )


def load_catalog(path: Path) -> list[TemplateDefinition]:
    """Read a YAML file of templates (``templates:`` list); names must be unique.

    Raises:
        BadInput: the file is not such a list, or a definition breaks a rule (naming it).
        OSError: the file cannot be read.
    """
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    items = doc.get("templates") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise BadInput(f"{path}: expected a mapping with a 'templates' list", field="templates")
    out = [definition_from_json(item, f"templates[{i}]") for i, item in enumerate(items)]
    names = [d.name for d in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise BadInput(f"{path}: template names repeat: {dupes}", field="templates")
    return out
