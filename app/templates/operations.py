"""Query templates as a service: create, update, approve, list, run (SPEC §4).

Every function takes ``(services, principal, request)`` (request = a frozen dataclass of
validated input), opens and commits its own session and returns domain objects.

Rules:

* A template belongs to one context set of the caller's workspace; editors propose
  (``createQueryTemplate``, ``document:write``: an unapproved draft), changing and approving
  need an admin (``collection:write``; members only, checked by the registry).
  ``checkQueryTemplate`` gives any member the approval check's verdict without approving.
* Approval runs the sqlglot check (:mod:`app.templates.approval`) once, in the business
  database's dialect, and records the SHA-256 of the SQL and declarations it approved. Any
  change (:func:`update_template`) gives a new digest: the template is unapproved until an
  admin approves it again. An approval may name the ``version`` it approves (409 if stale).
* Listing (``queryTemplates``): agents see only approved templates of active sets — name,
  description, parameters — never the SQL; members (every role) also see drafts, the SQL and
  the approval state (also of a deactivated set).
* Running (``runQueryTemplate``, scope ``queries:run``): the template must be approved (for
  the configured dialect) and its set active; a credential bound to a context set may run
  only that set's templates (403 ``AGENT_CONTEXT_SET_SCOPE_REFUSED``); a deactivated set's
  templates do not run (403 ``AGENT_CONTEXT_SET_INACTIVE``). Parameter values are
  checked before any connection to the business database is made.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.contextsets import active_set, check_set_access
from cairn.app.core.config import Settings
from cairn.app.core.db import Database
from cairn.app.core.errors import BadInput, Conflict, NotFound
from cairn.app.core.ids import utcnow
from cairn.app.core.models import ContextSet, QueryTemplate
from cairn.app.core.text_rules import validate_identifier
from cairn.app.governance import Principal
from cairn.app.templates.approval import check_sql, template_digest
from cairn.app.templates.catalog import TemplateDefinition
from cairn.app.templates.errors import QueryTemplateRefused, TemplateNotApproved
from cairn.app.templates.params import ParameterSpec, bind_values, parse_specs, specs_to_json
from cairn.app.templates.runner import QueryResult, TemplatesDatabase


class TemplateServices(Protocol):
    """What these functions use of :class:`app.context.Services`: settings, the Cairn database
    and the business database member."""

    @property
    def settings(self) -> Settings: ...

    @property
    def db(self) -> Database: ...

    @property
    def query_database(self) -> TemplatesDatabase: ...


@dataclass(frozen=True)
class TemplateContext:
    """A :class:`TemplateServices` for SQL-only callers (the ``cairn templates`` commands, the
    demo), which must not open the search indexes a running server holds."""

    settings: Settings
    db: Database
    query_database: TemplatesDatabase


@dataclass(frozen=True)
class TemplateView:
    """A template as returned: ``sql`` and the approval details only for members (never agents).

    ``approved`` is true when the current SQL and declarations carry an approval.
    """

    id: str
    context_set_id: str
    name: str
    description: str
    parameters: tuple[ParameterSpec, ...]
    max_rows: int | None
    version: int
    approved: bool
    sql: str | None = None
    approved_by: str | None = None
    approved_at: Any = None
    updated_at: Any = None


@dataclass(frozen=True)
class CreateTemplateRequest:
    """``createQueryTemplate``: a definition for a context set."""

    context_set_id: str
    definition: TemplateDefinition


@dataclass(frozen=True)
class UpdateTemplateRequest:
    """``updateQueryTemplate``: the template's new definition (its approval lapses if it changed)."""

    template_id: str
    definition: TemplateDefinition


@dataclass(frozen=True)
class ApproveTemplateRequest:
    """``approveQueryTemplate``: approve the current content (optionally only if at ``version``)."""

    template_id: str
    version: int | None = None


@dataclass(frozen=True)
class CheckTemplateRequest:
    """``checkQueryTemplate``: run the approval check on a template's current SQL (nothing recorded)."""

    template_id: str


@dataclass(frozen=True)
class TemplateCheck:
    """The approval check's verdict on a template's current content: ``passed`` when
    ``violations`` (one-line reasons, :func:`app.templates.approval.check_sql`) is empty."""

    template_id: str
    version: int
    dialect: str
    passed: bool
    violations: tuple[str, ...]


@dataclass(frozen=True)
class ListTemplatesRequest:
    """``queryTemplates``: the templates of one context set (the bound one for bound credentials).

    ``every_set`` (the MCP ``list_query_templates`` tool): with no ``context_set_id`` and no
    binding, the templates of every active set of the workspace instead of ``BadInput``, so an
    agent finds a template without knowing a set id first.
    """

    context_set_id: str | None = None
    every_set: bool = False


@dataclass(frozen=True)
class RunTemplateRequest:
    """``runQueryTemplate``: the template, the agent's parameter object, optionally its set."""

    template_id: str
    parameters: Any
    context_set_id: str | None = None


@dataclass(frozen=True)
class TemplateRun:
    """A run: the template's id, name and version, and the rows."""

    template_id: str
    name: str
    version: int
    result: QueryResult


def _is_member(principal: Principal) -> bool:
    return not principal.is_agent


def _view(row: QueryTemplate, *, member: bool) -> TemplateView:
    return TemplateView(
        id=row.id,
        context_set_id=row.context_set_id,
        name=row.name,
        description=row.description,
        parameters=parse_specs(row.parameters),
        max_rows=row.max_rows,
        version=row.version,
        approved=row.approved_digest is not None and row.approved_digest == row.digest,
        sql=row.sql_text if member else None,
        approved_by=row.approved_by if member else None,
        approved_at=row.approved_at if member else None,
        updated_at=row.updated_at if member else None,
    )


async def _context_set(s: AsyncSession, principal: Principal, context_set_id: str) -> ContextSet:
    validate_identifier(context_set_id, "contextSetId")
    row = await s.get(ContextSet, context_set_id)
    if row is None or row.workspace_id != principal.workspace_id:
        raise NotFound(f"no context set {context_set_id} in this workspace", field="contextSetId")
    return row


async def _template(s: AsyncSession, principal: Principal, template_id: str) -> QueryTemplate:
    validate_identifier(template_id, "templateId")
    row = await s.get(QueryTemplate, template_id)
    if row is None or row.workspace_id != principal.workspace_id:
        raise NotFound(f"no query template {template_id} in this workspace", field="templateId")
    return row


def _cap_rows(services: TemplateServices, definition: TemplateDefinition) -> None:
    cap = services.settings.templates_max_rows
    if definition.max_rows is not None and definition.max_rows > cap:
        raise BadInput(
            f"input.maxRows is {definition.max_rows}; this server's cap (CAIRN_TEMPLATES_MAX_ROWS) is {cap}",
            field="input.maxRows",
            limit=cap,
        )


async def create_template(
    services: TemplateServices, principal: Principal, request: CreateTemplateRequest
) -> TemplateView:
    """Store a new, unapproved template in a context set of the caller's workspace.

    Raises:
        NotFound: no such context set. Conflict: the set already has a template of that name.
        BadInput: ``maxRows`` above the server's cap.
    """
    d = request.definition
    _cap_rows(services, d)
    now = utcnow()
    async with services.db.session() as s:
        await _context_set(s, principal, request.context_set_id)
        clash = await s.execute(
            select(col(QueryTemplate.id)).where(
                col(QueryTemplate.context_set_id) == request.context_set_id, col(QueryTemplate.name) == d.name
            )
        )
        if clash.first() is not None:
            raise Conflict(
                f"context set {request.context_set_id} already has a template named {d.name!r}; "
                "change it with updateQueryTemplate",
                field="input.name",
            )
        row = QueryTemplate(
            id=f"qt_{secrets.token_hex(8)}",
            workspace_id=principal.workspace_id,
            context_set_id=request.context_set_id,
            name=d.name,
            description=d.description,
            sql_text=d.sql,
            parameters=specs_to_json(d.parameters),
            max_rows=d.max_rows,
            digest=template_digest(d.sql, d.parameters),
            created_at=now,
            created_by=principal.member_id,
            updated_at=now,
            updated_by=principal.member_id,
        )
        s.add(row)
        await s.flush()
        return _view(row, member=True)


async def update_template(
    services: TemplateServices, principal: Principal, request: UpdateTemplateRequest
) -> TemplateView:
    """Replace a template's definition. A changed SQL or declaration needs a new approval;
    an identical definition changes nothing (same version, approval kept).

    Raises:
        NotFound: no such template. Conflict: the new name is taken in the set.
    """
    d = request.definition
    _cap_rows(services, d)
    async with services.db.session() as s:
        row = await _template(s, principal, request.template_id)
        digest = template_digest(d.sql, d.parameters)
        if (row.name, row.description, row.digest, row.max_rows) == (d.name, d.description, digest, d.max_rows):
            return _view(row, member=True)
        if d.name != row.name:
            clash = await s.execute(
                select(col(QueryTemplate.id)).where(
                    col(QueryTemplate.context_set_id) == row.context_set_id, col(QueryTemplate.name) == d.name
                )
            )
            if clash.first() is not None:
                raise Conflict(f"the context set already has a template named {d.name!r}", field="input.name")
        row.name, row.description, row.sql_text = d.name, d.description, d.sql
        row.parameters = specs_to_json(d.parameters)
        row.max_rows = d.max_rows
        row.digest = digest
        row.version += 1
        row.updated_at, row.updated_by = utcnow(), principal.member_id
        s.add(row)
        await s.flush()
        return _view(row, member=True)


async def approve_template(
    services: TemplateServices, principal: Principal, request: ApproveTemplateRequest
) -> TemplateView:
    """Run the approval check on the template's current SQL and record the approval.

    Raises:
        NotFound: no such template. Conflict: ``version`` is not the current one.
        QueryTemplateRefused: the SQL breaks an approval rule (each violation listed).
        TemplatesDatabaseMissing: no business database configured (its dialect decides the check).
    """
    async with services.db.session() as s:
        row = await _template(s, principal, request.template_id)
        dialect = services.query_database.get().dialect  # after the lookup: an unknown id is 404, not 503
        if request.version is not None and request.version != row.version:
            raise Conflict(
                f"template {row.id} is at version {row.version}, not {request.version}: review the current "
                "SQL and approve that version",
                field="version",
            )
        specs = parse_specs(row.parameters)
        check_sql(row.sql_text, specs, dialect)
        row.approved_digest = template_digest(row.sql_text, specs)
        row.digest = row.approved_digest
        row.approved_dialect = dialect
        row.approved_by, row.approved_at = principal.member_id, utcnow()
        s.add(row)
        await s.flush()
        return _view(row, member=True)


async def check_template(
    services: TemplateServices, principal: Principal, request: CheckTemplateRequest
) -> TemplateCheck:
    """The approval check's verdict on the template's current SQL in the business database's
    dialect, without approving (what an admin sees before approving).

    Raises:
        NotFound: no such template. TemplatesDatabaseMissing: no business database configured.
    """
    async with services.db.session() as s:
        row = await _template(s, principal, request.template_id)
    dialect = services.query_database.get().dialect
    try:
        check_sql(row.sql_text, parse_specs(row.parameters), dialect)
    except QueryTemplateRefused as refused:
        problems = tuple(refused.extra.get("violations") or (refused.message,))
        return TemplateCheck(row.id, row.version, dialect, False, problems)
    return TemplateCheck(row.id, row.version, dialect, True, ())


async def list_templates(
    services: TemplateServices, principal: Principal, request: ListTemplatesRequest
) -> list[TemplateView]:
    """The templates of a context set, by name (see the module doc for who sees what).

    Raises:
        BadInput: no ``contextSetId`` and the credential is not bound to a set.
        ContextSetScopeRefused: another set than the bound one (403).
        NotFound: no such set. ContextSetInactive: the set is deactivated (403; members still see it).
    """
    member = _is_member(principal)
    async with services.db.session() as s:
        query = select(QueryTemplate)
        if member and request.context_set_id is not None:
            query = query.where(
                col(QueryTemplate.context_set_id) == (await _context_set(s, principal, request.context_set_id)).id
            )
        else:
            view = await active_set(s, principal, request.context_set_id, "contextSetId")
            if view is not None:
                query = query.where(col(QueryTemplate.context_set_id) == view.id)
            elif request.every_set:  # unbound, no set named: the active sets of the workspace
                query = query.join(ContextSet, col(ContextSet.id) == col(QueryTemplate.context_set_id)).where(
                    col(ContextSet.workspace_id) == principal.workspace_id, col(ContextSet.active).is_(True)
                )
            else:
                raise BadInput(
                    "contextSetId is required (this credential is not bound to a context set)", field="contextSetId"
                )
        rows = (await s.execute(query.order_by(col(QueryTemplate.name), col(QueryTemplate.id)))).scalars().all()
    views = [_view(r, member=member) for r in rows]
    return views if member else [v for v in views if v.approved]


async def run_template(services: TemplateServices, principal: Principal, request: RunTemplateRequest) -> TemplateRun:
    """Run an approved template with the caller's parameters (module doc for the rules).

    Raises:
        NotFound: no such template (or not in ``contextSetId``). ContextSetScopeRefused (403):
        another set than the bound one. ContextSetInactive (403). TemplateNotApproved (409).
        QueryParameterInvalid (400, before the business database is touched).
        TemplatesDatabaseMissing (503), QueryTimeout (504), QueryFailed (500).
    """
    if request.context_set_id is not None:
        check_set_access(principal, request.context_set_id)
    async with services.db.session() as s:
        row = await _template(s, principal, request.template_id)
        if request.context_set_id is not None and row.context_set_id != request.context_set_id:
            raise NotFound(f"no query template {row.id} in context set {request.context_set_id}", field="templateId")
        # the template's own set: a bound credential may use only its set; the set must be active
        await active_set(s, principal, row.context_set_id, "templateId")
    specs = parse_specs(row.parameters)
    digest = template_digest(row.sql_text, specs)
    database = services.query_database.get()
    if row.approved_digest != digest or row.approved_dialect != database.dialect:
        raise TemplateNotApproved(
            f"template {row.id} (version {row.version}) has no approval for its current content"
            + (f" on {database.dialect}" if row.approved_digest == digest else "")
            + "; an admin must approve it",
            field="templateId",
        )
    values = bind_values(specs, request.parameters)
    st = services.settings
    cap = min(row.max_rows or st.templates_max_rows, st.templates_max_rows)
    result = await database.run(row.sql_text, specs, values, timeout_seconds=st.templates_timeout_seconds, max_rows=cap)
    return TemplateRun(template_id=row.id, name=row.name, version=row.version, result=result)
