"""Query templates (SPEC §4): Strawberry types and resolvers (rules in app.templates.operations).

Agents list (``queryTemplates``) and run (``runQueryTemplate``) approved templates with the
``queries:run`` scope and never send or see SQL; members see the SQL and drafts; editors propose
(create), admins change and approve; ``checkQueryTemplate`` shows the approval check's verdict.
"""

from __future__ import annotations

import enum
from datetime import date, datetime
from typing import Any

import strawberry
from strawberry.scalars import JSON

from cairn.app import templates as tpl
from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import validate_identifier
from cairn.app.governance import Governed, Principal
from cairn.resolvers.ontology_types import ResponseFormat
from cairn.resolvers.types import Info


@strawberry.enum(description="The type of a template parameter.")
class QueryParameterType(enum.Enum):
    STRING = "string"
    INTEGER = "integer"
    FLOAT = "float"
    BOOLEAN = "boolean"
    DATE = "date"
    ENUM = "enum"
    LIST = "list"


@strawberry.type(
    description="A typed template parameter and its bounds. Values are checked strictly (no coercion): "
    "integer = JSON integer, float = JSON number, date = 'YYYY-MM-DD', list = JSON array of items."
)
class QueryTemplateParameter:
    name: str
    type: QueryParameterType
    description: str
    required: bool
    default: JSON | None = strawberry.field(description="Used when the parameter is left out.")
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = strawberry.field(default=None, description="The whole string must match.")
    min: JSON | None = strawberry.field(default=None, description="Smallest allowed value (integer, float, date).")
    max: JSON | None = strawberry.field(default=None, description="Largest allowed value (integer, float, date).")
    values: list[str] | None = strawberry.field(default=None, description="Allowed values of an enum.")
    items: QueryTemplateParameter | None = strawberry.field(default=None, description="Item type of a list.")
    min_items: int | None = None
    max_items: int | None = None


@strawberry.type(
    description="A parameterised query of a context set. Agents see approved ones: name, description and "
    "parameters; sql, drafts and the approval details are shown to members only (null for agents)."
)
class QueryTemplate:
    id: strawberry.ID
    context_set_id: strawberry.ID
    name: str
    description: str
    parameters: list[QueryTemplateParameter]
    max_rows: int | None
    version: int = strawberry.field(description="1 at creation, +1 per change; a change needs a new approval.")
    approved: bool = strawberry.field(description="True when the current SQL and parameters are approved.")
    sql: str | None = strawberry.field(description="Members only (never agents).")
    approved_by: str | None = strawberry.field(description="Members only: member id of the approver.")
    approved_at: datetime | None = strawberry.field(description="Members only.")


@strawberry.type(description="The approval check's verdict on a template's current SQL (nothing approved).")
class QueryTemplateCheck:
    template_id: strawberry.ID
    version: int = strawberry.field(description="The template version checked.")
    dialect: str = strawberry.field(description="The business database's dialect the check parsed for.")
    passed: bool = strawberry.field(description="True when approveQueryTemplate would accept it.")
    violations: list[str] = strawberry.field(description="One line per broken rule (empty when passed).")


@strawberry.type(description="A result column: name and the type read from its values.")
class QueryResultColumn:
    name: str
    type: str = strawberry.field(
        description="integer, float, string, boolean, date, datetime, bytes (hex), or null when every value is null."
    )


@strawberry.type(description="A coded notice about a result, e.g. QUERY_ROW_CAP_REACHED.")
class QueryNotice:
    code: str
    message: str


@strawberry.type(description="The rows of one template run. rows (JSON) or toon (TOON text) by responseFormat.")
class QueryTemplateResult:
    template_id: strawberry.ID
    name: str
    version: int
    columns: list[QueryResultColumn]
    rows: JSON | None = strawberry.field(description="With responseFormat JSON: a list of {column: value} objects.")
    toon: str | None = strawberry.field(description="With responseFormat TOON: the same rows as TOON ({rows: [...]}).")
    response_format: ResponseFormat
    row_count: int
    truncated: bool = strawberry.field(description="True when more rows existed than rowCap (see notices).")
    row_cap: int
    notices: list[QueryNotice]
    elapsed_ms: float


@strawberry.input(
    description="A template definition. parameters: a JSON list of declarations (see QueryTemplateParameter)."
)
class QueryTemplateInput:
    name: str = strawberry.field(description="[a-z][a-z0-9_]{0,63}, unique in the context set.")
    sql: str = strawberry.field(
        description="One SELECT with named :parameter placeholders (a list parameter as `column IN :name`)."
    )
    description: str = strawberry.field(default="", description="≤ 1,000 characters; shown to agents.")
    parameters: JSON | None = strawberry.field(
        default=None,
        description='≤ 20 declarations, e.g. [{"name": "country", "type": "string", "maxLength": 15}, '
        '{"name": "top", "type": "integer", "min": 1, "max": 50, "default": 10}].',
    )
    max_rows: int | None = strawberry.field(default=None, description="Row cap, ≤ the server's (default 1,000).")


def _json(value: Any) -> Any:
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value


def to_parameter(p: tpl.ParameterSpec) -> QueryTemplateParameter:
    """Domain declaration → GraphQL parameter."""
    return QueryTemplateParameter(
        name=p.name,
        type=QueryParameterType(p.type),
        description=p.description,
        required=p.required,
        default=_json(p.default),
        min_length=p.min_length,
        max_length=p.max_length,
        pattern=p.pattern,
        min=_json(p.minimum),
        max=_json(p.maximum),
        values=list(p.values) or None,
        items=to_parameter(p.items) if p.items is not None else None,
        min_items=p.min_items,
        max_items=p.max_items,
    )


def to_template(v: tpl.TemplateView) -> QueryTemplate:
    """Service view → GraphQL template (sql already withheld from agents by the service)."""
    return QueryTemplate(
        id=strawberry.ID(v.id),
        context_set_id=strawberry.ID(v.context_set_id),
        name=v.name,
        description=v.description,
        parameters=[to_parameter(p) for p in v.parameters],
        max_rows=v.max_rows,
        version=v.version,
        approved=v.approved,
        sql=v.sql,
        approved_by=v.approved_by,
        approved_at=v.approved_at,
    )


def _definition(input: QueryTemplateInput) -> tpl.TemplateDefinition:
    raw: dict[str, Any] = {"name": input.name, "sql": input.sql, "description": input.description}
    if input.parameters is not None:
        raw["parameters"] = input.parameters
    if input.max_rows is not None:
        raw["maxRows"] = input.max_rows
    return tpl.definition_from_json(raw, "input")


def _id(value: str | None, field: str) -> None:
    if value is not None:
        validate_identifier(value, field)


def _validate_create(context_set_id: str, input: QueryTemplateInput) -> None:
    _id(context_set_id, "contextSetId")
    _definition(input)


def _validate_update(template_id: str, input: QueryTemplateInput) -> None:
    _id(template_id, "templateId")
    _definition(input)


def _validate_approve(template_id: str, version: int | None = None) -> None:
    _id(template_id, "templateId")
    if version is not None and version < 1:
        raise BadInput("version must be ≥ 1", field="version", limit=1)


def _validate_check(template_id: str) -> None:
    _id(template_id, "templateId")


def _validate_list(context_set_id: str | None = None) -> None:
    _id(context_set_id, "contextSetId")


def _validate_run(
    template_id: str,
    parameters: Any = None,
    context_set_id: str | None = None,
    response_format: ResponseFormat = ResponseFormat.JSON,
) -> None:
    _id(template_id, "templateId")
    _id(context_set_id, "contextSetId")
    if parameters is not None and not isinstance(parameters, dict):
        raise tpl.QueryParameterInvalid(
            "parameters must be an object of name → value", field="parameters", reason="WRONG_TYPE"
        )


@strawberry.type
class TemplateQuery:
    @strawberry.field(
        description="Templates of a context set (the bound one by default): approved ones of an active set for "
        "agents, with name, description and parameters — never SQL (queries:run).",
        extensions=[Governed("queryTemplates", validate=_validate_list)],
    )
    async def query_templates(
        self, info: Info, principal: Principal, context_set_id: strawberry.ID | None = None
    ) -> list[QueryTemplate]:
        views = await tpl.list_templates(
            info.context.services, principal, tpl.ListTemplatesRequest(context_set_id=context_set_id)
        )
        return [to_template(v) for v in views]

    @strawberry.field(
        description="The approval check's verdict on a template's current SQL, without approving (members only): "
        "what approveQueryTemplate would accept or refuse (one line per violation).",
        extensions=[Governed("checkQueryTemplate", validate=_validate_check)],
    )
    async def check_query_template(
        self, info: Info, principal: Principal, template_id: strawberry.ID
    ) -> QueryTemplateCheck:
        c = await tpl.check_template(
            info.context.services, principal, tpl.CheckTemplateRequest(template_id=template_id)
        )
        return QueryTemplateCheck(
            template_id=strawberry.ID(c.template_id),
            version=c.version,
            dialect=c.dialect,
            passed=c.passed,
            violations=list(c.violations),
        )

    @strawberry.field(
        description="Run an approved template with typed parameters (queries:run): read-only, with a timeout "
        "(504 QUERY_TIMEOUT) and a row cap (truncated + QUERY_ROW_CAP_REACHED notice). Bad parameters: "
        "QUERY_PARAMETER_INVALID naming the parameter and the limit; nothing runs.",
        extensions=[Governed("runQueryTemplate", validate=_validate_run)],
    )
    async def run_query_template(
        self,
        info: Info,
        principal: Principal,
        template_id: strawberry.ID,
        parameters: JSON | None = None,
        context_set_id: strawberry.ID | None = None,
        response_format: ResponseFormat = ResponseFormat.JSON,
    ) -> QueryTemplateResult:
        run = await tpl.run_template(
            info.context.services,
            principal,
            tpl.RunTemplateRequest(template_id=template_id, parameters=parameters, context_set_id=context_set_id),
        )
        r = run.result
        toon = response_format is ResponseFormat.TOON
        return QueryTemplateResult(
            template_id=strawberry.ID(run.template_id),
            name=run.name,
            version=run.version,
            columns=[QueryResultColumn(name=c.name, type=c.type) for c in r.columns],
            rows=None if toon or r.rows is None else JSON(r.rows),
            toon=tpl.toon_rows(r.rows) if toon else None,
            response_format=response_format,
            row_count=len(r.rows),
            truncated=r.truncated,
            row_cap=r.row_cap,
            notices=[QueryNotice(code=n.code, message=n.message) for n in r.notices],
            elapsed_ms=r.elapsed_ms,
        )


@strawberry.type
class TemplateMutation:
    @strawberry.mutation(
        description="Propose a query template for a context set (editors and up): stored unapproved until an admin "
        "approves it.",
        extensions=[Governed("createQueryTemplate", validate=_validate_create)],
    )
    async def create_query_template(
        self, info: Info, principal: Principal, context_set_id: strawberry.ID, input: QueryTemplateInput
    ) -> QueryTemplate:
        view = await tpl.create_template(
            info.context.services,
            principal,
            tpl.CreateTemplateRequest(context_set_id=context_set_id, definition=_definition(input)),
        )
        return to_template(view)

    @strawberry.mutation(
        description="Admin: change a template. A changed SQL or parameter list needs a new approval.",
        extensions=[Governed("updateQueryTemplate", validate=_validate_update)],
    )
    async def update_query_template(
        self, info: Info, principal: Principal, template_id: strawberry.ID, input: QueryTemplateInput
    ) -> QueryTemplate:
        view = await tpl.update_template(
            info.context.services,
            principal,
            tpl.UpdateTemplateRequest(template_id=template_id, definition=_definition(input)),
        )
        return to_template(view)

    @strawberry.mutation(
        description="Admin: approve a template's current SQL after the check (one SELECT, no writes or DDL, "
        "no side-effect functions, every parameter bound). QUERY_TEMPLATE_REFUSED lists each violation.",
        extensions=[Governed("approveQueryTemplate", validate=_validate_approve)],
    )
    async def approve_query_template(
        self, info: Info, principal: Principal, template_id: strawberry.ID, version: int | None = None
    ) -> QueryTemplate:
        view = await tpl.approve_template(
            info.context.services, principal, tpl.ApproveTemplateRequest(template_id=template_id, version=version)
        )
        return to_template(view)
