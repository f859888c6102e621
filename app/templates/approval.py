"""The approval check: a template's SQL is parsed once, with sqlglot, before an admin's approval counts.

:func:`check_sql` lists every violation (all of them, not the first) of these rules:

1. the text parses in the business database's dialect (``sqlite`` or ``postgres``);
2. exactly one statement (``SELECT 1; SELECT 2`` and ``SELECT 1; DROP …`` are refused; one
   trailing ``;`` is allowed);
3. it is a query (``SELECT``, with ``WITH`` and ``UNION``/``INTERSECT``/``EXCEPT``), and nowhere
   inside it is a write or DDL (``INSERT``/``UPDATE``/``DELETE``/``MERGE`` — also in a ``WITH`` —,
   ``CREATE``/``DROP``/``ALTER``/``TRUNCATE``, ``SELECT … INTO``, ``FOR UPDATE``/``FOR SHARE``,
   ``SET``, ``PRAGMA``, ``COPY``, ``ATTACH``, transaction control, anything sqlglot could not
   parse as SQL (``Command``));
4. functions: every function sqlglot knows by type (``COUNT``, ``ROUND``, ``COALESCE`` …) is
   allowed unless its name is on the side-effect list (:data:`DENIED_FUNCTION_PREFIXES`:
   ``pg_sleep``, ``set_config``, ``nextval``, ``lo_import``, ``dblink``, ``load_extension`` …);
   a function sqlglot does not know (``Anonymous``: user-defined or vendor functions) is
   refused unless it is on :data:`ALLOWED_ANONYMOUS` (read-only built-ins);
5. no system catalogs (``pg_catalog``, ``information_schema``, ``pg_*``, ``sqlite_*`` tables);
6. parameters: only named placeholders ``:name`` (``?``, ``$1``, ``%s``, ``@x`` refused); every
   placeholder is a declared parameter and every declared parameter is used; a list
   parameter appears only as ``column IN :name`` and a scalar never does; SQLAlchemy (which
   binds the values) must see exactly the same placeholders — a ``:name`` inside a string
   literal or a comment is refused, as it would be bound where sqlglot sees text.

Method: sqlglot 30 (``sqlglot.parse`` with ``read=dialect``) walked node by node; the rules
are an allow-list of statement shapes and anonymous functions plus a deny-list of names.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import sqlglot
from sqlalchemy import text
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from cairn.app.core.errors import BadInput
from cairn.app.templates.errors import QueryTemplateRefused
from cairn.app.templates.params import ParameterSpec, specs_to_json

DIALECTS = {"sqlite": "sqlite", "postgresql": "postgres"}
"""Business database dialect (SQLAlchemy name) → sqlglot dialect."""

MAX_SQL_LENGTH = 20_000

DENIED_FUNCTION_PREFIXES = (
    "pg_",
    "lo_",
    "dblink",
    "set_config",
    "current_setting",
    "nextval",
    "setval",
    "currval",
    "lastval",
    "txid_",
    "load_extension",
    "readfile",
    "writefile",
    "edit",
    "fts3_tokenizer",
    "sqlite_",
    "query_to_xml",
    "table_to_xml",
    "cursor_to_xml",
    "schema_to_xml",
    "database_to_xml",
    "gen_random",
)
"""Function-name prefixes refused whatever sqlglot calls them (side effects, sleeps, file or
network access, server configuration, sequences)."""

ALLOWED_ANONYMOUS = frozenset(
    {"julianday", "printf", "format", "total", "initcap", "split_part", "date_part", "btrim", "ltrim", "rtrim"}
)
"""Functions sqlglot parses as ``Anonymous`` that are read-only built-ins and may be used."""

_FORBIDDEN_NODES = tuple(
    getattr(exp, name)
    for name in (
        "Insert",
        "Update",
        "Delete",
        "Merge",
        "Create",
        "Drop",
        "Alter",
        "AlterTable",
        "TruncateTable",
        "Command",
        "Into",
        "Lock",
        "Pragma",
        "Set",
        "Transaction",
        "Commit",
        "Rollback",
        "Copy",
        "Attach",
        "Detach",
        "Use",
        "Grant",
        "Revoke",
        "LoadData",
        "Analyze",
        "Kill",
    )
    if hasattr(exp, name)
)
_SYSTEM_SCHEMAS = {"pg_catalog", "information_schema", "pg_toast", "sqlite_temp_master"}


def template_digest(sql: str, specs: tuple[ParameterSpec, ...]) -> str:
    """SHA-256 (hex) of the SQL text and the parameter declarations: what an approval covers.

    Any change to either gives a different digest, so the approval no longer matches.
    """
    blob = json.dumps({"sql": sql, "parameters": specs_to_json(specs)}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return node.sql_name().lower()


def _violations(sql: str, specs: tuple[ParameterSpec, ...], dialect: str) -> list[str]:
    if not sql.strip():
        return ["the SQL is empty"]
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except (ParseError, TokenError) as exc:
        first = str(exc).splitlines()[0][:300]
        return [f"the SQL does not parse as {dialect} SQL: {first}"]
    if len(statements) != 1:
        return [f"exactly one statement is allowed; found {len(statements)}"]
    tree = statements[0]
    out: list[str] = []
    if not isinstance(tree, exp.Select | exp.Union | exp.Intersect | exp.Except):
        out.append(f"the statement must be a SELECT query; found {type(tree).__name__.upper()}")
    seen_kinds: set[str] = set()
    placeholders: dict[str, list[exp.Placeholder]] = {}
    for node in tree.walk():
        if isinstance(node, _FORBIDDEN_NODES):
            kind = type(node).__name__.upper()
            if kind not in seen_kinds:
                seen_kinds.add(kind)
                out.append(f"{kind} is not allowed in a query template (read-only SELECT only)")
        elif isinstance(node, exp.Func):
            name = _function_name(node)
            if name.startswith(DENIED_FUNCTION_PREFIXES):
                out.append(f"function {name}() is refused (side effects, sleeps, files, settings or sequences)")
            elif isinstance(node, exp.Anonymous) and name not in ALLOWED_ANONYMOUS:
                out.append(
                    f"function {name}() is not a built-in the checker knows to be read-only; "
                    f"allowed beyond sqlglot's typed functions: {sorted(ALLOWED_ANONYMOUS)}"
                )
        elif isinstance(node, exp.Table):
            schema = str(node.db or "").lower()
            name = str(node.name or "").lower()
            if schema in _SYSTEM_SCHEMAS or name.startswith(("pg_", "sqlite_")) or name in _SYSTEM_SCHEMAS:
                out.append(f"system catalog {node.sql(dialect)} may not be read by a template")
        elif isinstance(node, exp.Parameter):
            out.append(f"positional or session parameter {node.sql(dialect)} is refused: use a named :parameter")
        elif isinstance(node, exp.Placeholder):
            if not node.this:
                out.append("positional placeholder ? is refused: use a named :parameter")
            else:
                placeholders.setdefault(str(node.this), []).append(node)
    declared = {s.name: s for s in specs}
    for name in sorted(set(placeholders) - set(declared)):
        out.append(f":{name} is used in the SQL but not declared as a parameter")
    for name in sorted(set(declared) - set(placeholders)):
        out.append(f"parameter {name!r} is declared but the SQL never uses :{name}")
    for name, nodes in sorted(placeholders.items()):
        spec = declared.get(name)
        if spec is None:
            continue
        for node in nodes:
            as_in_list = isinstance(node.parent, exp.In) and node.arg_key == "field"
            if spec.type == "list" and not as_in_list:
                out.append(f"list parameter :{name} must be used as `column IN :{name}` (an expanding list)")
                break
            if spec.type != "list" and as_in_list:
                out.append(f"`IN :{name}` needs a list parameter; {name!r} is {spec.type}")
                break
    try:
        bound = set(text(sql)._bindparams)
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy's own parse of the text, reported as a violation
        out.append(f"SQLAlchemy cannot read the parameters of this SQL: {exc}")
    else:
        if bound != set(placeholders):
            extra = sorted(bound - set(placeholders))
            missing = sorted(set(placeholders) - bound)
            out.append(
                "the placeholders SQLAlchemy would bind differ from those in the SQL "
                f"(only bound: {extra}, only parsed: {missing}); a ':name' inside a string literal "
                "or a comment is refused"
            )
    return out


def check_sql(sql: Any, specs: tuple[ParameterSpec, ...], dialect: str) -> None:
    """Run the approval rules (module doc) on ``sql`` for ``dialect`` (``sqlite``/``postgres``).

    Raises:
        QueryTemplateRefused: with ``violations`` (list of one-line reasons) and ``field="sql"``.
        BadInput: ``sql`` is not text or longer than :data:`MAX_SQL_LENGTH` characters.
    """
    if not isinstance(sql, str):
        raise BadInput("sql must be text", field="sql")
    if len(sql) > MAX_SQL_LENGTH:
        raise BadInput(f"sql is {len(sql):,} characters; at most {MAX_SQL_LENGTH:,}", field="sql", limit=MAX_SQL_LENGTH)
    problems = _violations(sql, specs, dialect)
    if problems:
        raise QueryTemplateRefused(
            f"the template's SQL cannot be approved: {'; '.join(problems)}",
            field="sql",
            violations=problems,
        )
