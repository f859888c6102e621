"""Query templates (SPEC §4, issue 13 item 5): admin-approved, parameterised SELECTs that belong to
an active context set, run by agents with typed, bound parameters on the business database.

Modules: ``params`` (typed declarations and value checks), ``approval`` (the sqlglot check),
``runner`` (read-only, timed, capped execution), ``catalog`` (YAML definitions; the bundled
``northwind.yaml``), ``northwind`` (build the Northwind database from its CSVs), ``operations``
(create, update, approve, list, run).

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from cairn.app.templates.approval import check_sql, template_digest
from cairn.app.templates.catalog import NORTHWIND_TEMPLATES, TemplateDefinition, definition_from_json, load_catalog
from cairn.app.templates.errors import (
    QueryFailed,
    QueryParameterInvalid,
    QueryTemplateInvalid,
    QueryTemplateRefused,
    QueryTimeout,
    TemplateNotApproved,
    TemplatesDatabaseMissing,
    TemplatesDatabaseUnavailable,
)
from cairn.app.templates.northwind import load_northwind
from cairn.app.templates.operations import (
    ApproveTemplateRequest,
    CheckTemplateRequest,
    CreateTemplateRequest,
    ListTemplatesRequest,
    RunTemplateRequest,
    TemplateCheck,
    TemplateContext,
    TemplateRun,
    TemplateServices,
    TemplateView,
    UpdateTemplateRequest,
    approve_template,
    check_template,
    create_template,
    list_templates,
    run_template,
    update_template,
)
from cairn.app.templates.params import (
    ParameterSpec,
    bind_values,
    parse_specs,
    specs_to_json,
)
from cairn.app.templates.runner import (
    Notice,
    QueryDatabase,
    QueryResult,
    ResultColumn,
    TemplatesDatabase,
    toon_rows,
)

__all__ = [
    "NORTHWIND_TEMPLATES",
    "ApproveTemplateRequest",
    "CheckTemplateRequest",
    "CreateTemplateRequest",
    "ListTemplatesRequest",
    "Notice",
    "ParameterSpec",
    "QueryDatabase",
    "QueryFailed",
    "QueryParameterInvalid",
    "QueryResult",
    "QueryTemplateInvalid",
    "QueryTemplateRefused",
    "QueryTimeout",
    "ResultColumn",
    "RunTemplateRequest",
    "TemplateCheck",
    "TemplateContext",
    "TemplateDefinition",
    "TemplateNotApproved",
    "TemplateRun",
    "TemplateServices",
    "TemplateView",
    "TemplatesDatabase",
    "TemplatesDatabaseMissing",
    "TemplatesDatabaseUnavailable",
    "UpdateTemplateRequest",
    "approve_template",
    "bind_values",
    "check_sql",
    "check_template",
    "create_template",
    "definition_from_json",
    "list_templates",
    "load_catalog",
    "load_northwind",
    "parse_specs",
    "run_template",
    "specs_to_json",
    "template_digest",
    "toon_rows",
    "update_template",
]
