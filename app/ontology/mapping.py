"""Knowledge-network mappings (YAML or JSON) and reading their source rows.

A mapping names the network, its source, and each object type::

    id: northwind                      # the knId
    name: Northwind Traders
    source: {kind: csv}                # csv: every *.csv of the source dir is a table
    #source: {kind: sql, url: "sqlite+aiosqlite:///shop.db"}   # operator-only (CLI)
    object_types:
      - id: product                    # the otId
        name: Product
        concept_groups: [catalog]
        table: products                # or sql: "SELECT ... FROM products JOIN ..."
        primary_key: [ProductID]
        properties:
          - {name: ProductID, type: integer}
          - {name: ProductName, type: string, full_text: true, vector: true}

Every source becomes SQL: CSV files are loaded (as text columns) into an in-memory SQLite
database, so an object type may be a table or any ``SELECT`` over the tables (joins for
names of related rows, ``CASE`` for derived flags, ``||`` for short descriptive texts).
That in-memory database is read-only for the mapping's SQL (an SQLite authorizer allows
only ``SELECT``/read/function actions: no ``ATTACH``, no writes) and a query is stopped
after 30 s. A ``sql`` source (a database URL) is read with SQLAlchemy and is refused over
GraphQL (it would let a caller make the server connect anywhere): use ``cairn ontology load``.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import os
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import validate_name, validate_path, validate_text
from cairn.app.ontology.errors import SourcePathNotAllowed
from cairn.app.ontology.types import check_identifier

MAX_MAPPING_BYTES = 256 * 1024
MAX_TYPES = 100
MAX_PROPERTIES = 200
MAX_ROWS_PER_TYPE = 200_000
MAX_NAME_CHARS = 200
QUERY_SECONDS = 30.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PropertySpec(_Strict):
    """One property: name (also the source column), type, indexes."""

    name: str
    type: Literal["string", "integer", "float", "boolean", "date", "datetime"]
    column: str | None = Field(default=None, description="Source column; default: name.")
    description: str = ""
    full_text: bool = False
    vector: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return check_identifier(v, "property name")

    @model_validator(mode="after")
    def _vector_on_text(self) -> PropertySpec:
        if (self.vector or self.full_text) and self.type != "string":
            raise ValueError(f"property {self.name}: full_text and vector indexes need type string")
        return self


class ObjectTypeSpec(_Strict):
    """One object type: id, where its rows come from, key, properties."""

    id: str
    name: str
    description: str = ""
    concept_groups: list[str] = Field(default_factory=list)
    table: str | None = None
    sql: str | None = None
    primary_key: list[str]
    properties: list[PropertySpec] = Field(min_length=1, max_length=MAX_PROPERTIES)

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        return check_identifier(v, "object type id")

    @model_validator(mode="after")
    def _check(self) -> ObjectTypeSpec:
        if (self.table is None) == (self.sql is None):
            raise ValueError(f"object type {self.id}: give exactly one of table or sql")
        names = [p.name for p in self.properties]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"object type {self.id}: duplicate properties {dupes}")
        if not self.primary_key:
            raise ValueError(f"object type {self.id}: primary_key needs at least one property")
        missing = [k for k in self.primary_key if k not in names]
        if missing:
            raise ValueError(f"object type {self.id}: primary_key names unknown properties {missing}")
        for group in self.concept_groups:
            check_identifier(group, f"object type {self.id} concept group")
        return self


class SourceSpec(_Strict):
    """``csv`` (a directory of CSV files, given at load time) or ``sql`` (a database URL)."""

    kind: Literal["csv", "sql"] = "csv"
    url: str | None = None

    @model_validator(mode="after")
    def _url(self) -> SourceSpec:
        if self.kind == "sql" and not self.url:
            raise ValueError("source.url is required when source.kind is sql")
        return self


class MappingSpec(_Strict):
    """A whole mapping (see module doc)."""

    id: str
    name: str
    description: str = ""
    source: SourceSpec = Field(default_factory=SourceSpec)
    object_types: list[ObjectTypeSpec] = Field(min_length=1, max_length=MAX_TYPES)

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        return check_identifier(v, "knowledge network id")

    @model_validator(mode="after")
    def _unique(self) -> MappingSpec:
        ids = [t.id for t in self.object_types]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate object type ids {dupes}")
        return self


def parse_mapping(text: str) -> MappingSpec:
    """Parse a YAML (or JSON, a YAML subset) mapping and validate it.

    A document that parses as JSON is read as JSON (PyYAML turns an escaped surrogate pair such
    as ``"\\ud83c\\udf70"`` into two lone surrogates); anything else as YAML.

    Raises:
        BadInput: too large, not YAML, or not the mapping shape (naming the path of the
            first wrong field).
    """
    if len(text.encode("utf-8")) > MAX_MAPPING_BYTES:
        raise BadInput(f"mapping is over {MAX_MAPPING_BYTES // 1024} KiB", field="mapping", limit=MAX_MAPPING_BYTES)
    try:
        raw = json.loads(text)  # PyYAML splits an escaped surrogate pair ("\ud83c\udf70") in two
    except ValueError:
        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise BadInput(f"mapping is not valid YAML/JSON: {exc}", field="mapping") from None
    if not isinstance(raw, dict):
        raise BadInput("mapping must be a YAML/JSON object with id, name, object_types", field="mapping")
    try:
        spec = MappingSpec.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "mapping"
        raise BadInput(f"mapping.{where}: {first['msg']}", field=f"mapping.{where}") from None
    except BadInput as exc:
        raise BadInput(f"mapping: {exc.message}", field="mapping") from None
    _check_texts(spec)
    return spec


def _check_texts(spec: MappingSpec) -> None:
    """Names are names, descriptions free text (:mod:`app.core.text_rules`): what users read later."""
    validate_name(spec.name, "mapping.name", MAX_NAME_CHARS)
    validate_text(spec.description, "mapping.description", MAX_MAPPING_BYTES, min_len=0)
    for i, t in enumerate(spec.object_types):
        validate_name(t.name, f"mapping.object_types[{i}].name", MAX_NAME_CHARS)
        validate_text(t.description, f"mapping.object_types[{i}].description", MAX_MAPPING_BYTES, min_len=0)
        for j, p in enumerate(t.properties):
            validate_text(
                p.description, f"mapping.object_types[{i}].properties[{j}].description", MAX_MAPPING_BYTES, min_len=0
            )
    if spec.source.url is not None:
        validate_path(spec.source.url, "mapping.source.url")


def read_mapping_file(path: Path) -> MappingSpec:
    """Read and parse a mapping file (``.yaml``, ``.yml`` or ``.json``).

    Raises:
        BadInput: unreadable or invalid.
    """
    validate_path(str(path), "mapping")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot read mapping {path}: {exc.strerror}", field="mapping") from None
    return parse_mapping(text)


@dataclass
class SourceRows:
    """Rows of one object type as ``{column: value}`` dicts, in source order."""

    ot_id: str
    rows: list[dict[str, Any]]


_ALLOWED_SQLITE_ACTIONS = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    getattr(sqlite3, "SQLITE_RECURSIVE", 33),
}


def _real_roots(roots: Sequence[Path | str]) -> list[Path]:
    return [Path(r).resolve() for r in roots]


def _inside(real: Path, real_roots: Sequence[Path]) -> bool:
    return any(real == root or root in real.parents for root in real_roots)


def allowed_source_dir(source_dir: str | Path, roots: Sequence[Path | str]) -> Path:
    """The real path of ``source_dir`` when it lies under one of ``roots`` (real paths too).

    Symbolic links are resolved first (:meth:`pathlib.Path.resolve`), so a link inside an
    allowed directory that points outside it is refused like the outside path itself.

    Raises:
        BadInput: ``SOURCE_PATH_NOT_ALLOWED`` (field ``sourceDir``, ``path``) outside every
            root, or ``BAD_USER_INPUT`` when the path cannot be resolved or is no directory.
    """
    try:
        real = Path(source_dir).resolve()
    except (OSError, RuntimeError, ValueError):  # a link loop, or a NUL in the path
        raise BadInput(
            f"sourceDir {str(source_dir)!r} cannot be resolved to a directory", field="sourceDir", path=str(source_dir)
        ) from None
    if not _inside(real, _real_roots(roots)):
        raise SourcePathNotAllowed(
            f"sourceDir {str(source_dir)!r} is not under a directory this server allows "
            "(CAIRN_ONTOLOGY_SOURCE_DIRS; symbolic links count where they point); send the CSV files "
            "inline with files, or load with `cairn ontology load`",
            field="sourceDir",
            path=str(source_dir),
        )
    if not real.is_dir():
        raise BadInput(f"source directory {str(source_dir)!r} does not exist", field="sourceDir", path=str(source_dir))
    return real


def csv_files_of(source_dir: Path, roots: Sequence[Path | str] | None = None) -> dict[str, str]:
    """``{table: csv text}`` for every ``*.csv`` in a directory (table = file stem).

    Args:
        roots: When given (GraphQL loads: ``CAIRN_ONTOLOGY_SOURCE_DIRS``), every file's real
            path (symbolic links resolved) must lie under one of them. None: no restriction
            (the operator's CLI).

    Raises:
        BadInput: no CSV files there; a file that is a broken link, not a regular file, not
            UTF-8, or (``SOURCE_PATH_NOT_ALLOWED``) resolves outside ``roots``; each names the path.
    """
    files = sorted(Path(source_dir).glob("*.csv"))
    if not files:
        raise BadInput(f"no *.csv files in {source_dir}", field="sourceDir")
    real_roots = _real_roots(roots) if roots is not None else None
    out: dict[str, str] = {}
    for f in files:
        try:
            real = f.resolve(strict=True)
        except (OSError, RuntimeError):
            raise BadInput(
                f"{f} cannot be read: a broken symbolic link (or a link loop)", field="sourceDir", path=str(f)
            ) from None
        if real_roots is not None and not _inside(real, real_roots):
            raise SourcePathNotAllowed(
                f"{f} is a symbolic link to a file outside the directories this server allows "
                "(CAIRN_ONTOLOGY_SOURCE_DIRS); copy the file in, or send it inline with files",
                field="sourceDir",
                path=str(f),
            )
        if not real.is_file():
            raise BadInput(f"{f} is not a regular file", field="sourceDir", path=str(f))
        try:  # the checked real path, not the link, and no link at its last step
            with open(os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)), encoding="utf-8-sig") as fh:
                out[f.stem] = fh.read()
        except (OSError, UnicodeDecodeError) as exc:
            reason = "is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else f"cannot be read ({exc.strerror})"
            raise BadInput(f"{f} {reason}", field="sourceDir", path=str(f)) from None
    return out


def _csv_database(files: dict[str, str]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    for table_name, text in sorted(files.items()):
        reader = csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""))
        header = next(reader, None)
        if not header:
            continue
        cols = ", ".join('"' + h.replace('"', '""') + '" TEXT' for h in header)
        table = table_name.replace('"', '""')
        try:
            conn.execute(f'CREATE TABLE "{table}" ({cols})')
            marks = ", ".join("?" for _ in header)
            rows = [[None if v == "" else v for v in r] for r in reader if r]
            conn.executemany(f'INSERT INTO "{table}" VALUES ({marks})', rows)
        except (sqlite3.Error, csv.Error) as exc:
            raise BadInput(f"CSV {table_name}: {exc}", field=f"files.{table_name}") from None
    conn.commit()
    conn.set_authorizer(
        lambda action, *_: sqlite3.SQLITE_OK if action in _ALLOWED_SQLITE_ACTIONS else sqlite3.SQLITE_DENY
    )
    return conn


def _select_for(spec: ObjectTypeSpec) -> str:
    if spec.sql is not None:
        return spec.sql
    return 'SELECT * FROM "' + (spec.table or "").replace('"', '""') + '"'


def _query_overran(started: float) -> int:
    """SQLite progress handler: 1 (interrupt the query) once it has run over
    :data:`QUERY_SECONDS` since ``started`` (``time.monotonic()``), else 0."""
    return int(time.monotonic() - started > QUERY_SECONDS)


def read_csv_rows(mapping: MappingSpec, files: dict[str, str]) -> list[SourceRows]:
    """Run each object type's table/SQL over CSV tables ``{table: csv text}`` (blocking).

    Raises:
        BadInput: a malformed CSV, or a type's SQL fails / runs over 30 s / returns over
            200,000 rows (naming the object type).
    """
    conn = _csv_database(files)
    out = []
    try:
        for spec in mapping.object_types:
            started = time.monotonic()
            conn.set_progress_handler(functools.partial(_query_overran, started), 10_000)
            try:
                cur = conn.execute(_select_for(spec))
                names = [d[0] for d in cur.description]
                rows = cur.fetchmany(MAX_ROWS_PER_TYPE + 1)
            except sqlite3.Error as exc:
                raise BadInput(
                    f"object type {spec.id}: source query failed: {exc}", field=f"mapping.object_types.{spec.id}"
                ) from None
            if len(rows) > MAX_ROWS_PER_TYPE:
                raise BadInput(
                    f"object type {spec.id} has over {MAX_ROWS_PER_TYPE} rows",
                    field=f"mapping.object_types.{spec.id}",
                    limit=MAX_ROWS_PER_TYPE,
                )
            out.append(SourceRows(spec.id, [dict(zip(names, r)) for r in rows]))
    finally:
        conn.close()
    return out


async def read_sql_rows(mapping: MappingSpec) -> list[SourceRows]:
    """Run each object type's table/SQL on ``mapping.source.url`` (SQLAlchemy async URL).

    Raises:
        BadInput: the database cannot be reached or a query fails (naming the type).
    """
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(mapping.source.url or "")
    out = []
    try:
        async with engine.connect() as conn:
            for spec in mapping.object_types:
                try:
                    result = await conn.execute(text(_select_for(spec)))
                    names = list(result.keys())
                    rows = result.fetchmany(MAX_ROWS_PER_TYPE + 1)
                except Exception as exc:  # noqa: BLE001 - any driver error is the mapping's problem
                    raise BadInput(
                        f"object type {spec.id}: source query failed: {exc}", field=f"mapping.object_types.{spec.id}"
                    ) from None
                if len(rows) > MAX_ROWS_PER_TYPE:
                    raise BadInput(
                        f"object type {spec.id} has over {MAX_ROWS_PER_TYPE} rows",
                        field=f"mapping.object_types.{spec.id}",
                        limit=MAX_ROWS_PER_TYPE,
                    )
                out.append(SourceRows(spec.id, [dict(zip(names, r)) for r in rows]))
    except BadInput:
        raise
    except Exception as exc:  # noqa: BLE001
        raise BadInput(f"cannot read source {mapping.source.url!r}: {exc}", field="mapping.source.url") from None
    finally:
        await engine.dispose()
    return out


def mapping_json(mapping: MappingSpec) -> str:
    """Canonical JSON of a mapping (for receipts and idempotency)."""
    return json.dumps(mapping.model_dump(), sort_keys=True)
