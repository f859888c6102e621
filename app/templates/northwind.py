"""Build a Northwind business database (SQLite or PostgreSQL) from the Northwind CSV files.

The CSVs (``../shared/data/northwind/csv``; one per table, header row, empty field = NULL;
see SOURCE.md there) are read as they are: nothing of the data is copied into this
repository. Tables are named after the files (``orders``, ``order_details`` …) and columns
are the CSV headers in snake_case (``OrderID`` → ``order_id``, ``ShipVia`` → ``ship_via``), the
naming of the PostgreSQL port, so one template text runs on both databases.

Types: ids integer (``customer_id``, ``territory_id``, ``customer_type_id`` are text keys),
dates ``DATE`` (ISO text on SQLite), money and discount ``NUMERIC(12,4)`` on PostgreSQL
(``ROUND(x, 2)`` needs numeric there) and ``REAL`` on SQLite, ``discontinued`` boolean.
The picture/photo bitmaps are not in the CSVs.
"""

from __future__ import annotations

import csv
import re
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from cairn.app.templates.runner import async_url

TABLES = (
    "categories",
    "customers",
    "employees",
    "employee_territories",
    "orders",
    "order_details",
    "products",
    "region",
    "shippers",
    "suppliers",
    "territories",
    "customer_customer_demo",
    "customer_demographics",
)
_TEXT_KEYS = {"customer_id", "territory_id", "customer_type_id"}
_DATES = {"birth_date", "hire_date", "order_date", "required_date", "shipped_date"}
_MONEY = {"unit_price", "freight", "discount"}
_INTEGERS = {"quantity", "units_in_stock", "units_on_order", "reorder_level", "ship_via", "reports_to"}
_BOOLEANS = {"discontinued"}
_PRIMARY_KEYS = {
    "order_details": ("order_id", "product_id"),
    "employee_territories": ("employee_id", "territory_id"),
    "customer_customer_demo": ("customer_id", "customer_type_id"),
}


def snake(name: str) -> str:
    """``OrderID`` → ``order_id``, ``ShipPostalCode`` → ``ship_postal_code``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _type(column: str, dialect: str) -> sa.types.TypeEngine:
    if column in _TEXT_KEYS:
        return sa.Text()
    if column in _DATES:
        return sa.Date()
    if column in _MONEY:
        return sa.Float() if dialect == "sqlite" else sa.Numeric(12, 4)
    if column in _BOOLEANS:
        return sa.Boolean()
    if column in _INTEGERS or column.endswith("_id"):
        return sa.Integer()
    return sa.Text()


def _value(column: str, raw: str, dialect: str) -> Any:
    if raw == "":
        return None
    t = _type(column, dialect)
    if isinstance(t, sa.Date):
        return date.fromisoformat(raw)
    if isinstance(t, sa.Boolean):
        return raw not in ("0", "false", "False")
    if isinstance(t, sa.Integer):
        return int(raw)
    if isinstance(t, sa.Numeric):
        return Decimal(raw)
    if isinstance(t, sa.Float):
        return float(raw)
    return raw


def _read(csv_dir: Path, table: str) -> tuple[list[str], list[list[str]]]:
    with (csv_dir / f"{table}.csv").open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        return [snake(h) for h in header], list(reader)


async def load_northwind(url: str, csv_dir: Path, *, replace: bool = False) -> dict[str, int]:
    """Create the Northwind tables in the database at ``url`` and load the CSV rows.

    Args:
        url: ``sqlite:///path`` or ``postgresql://…`` (or their async forms); the database must exist
            (a SQLite file is created).
        csv_dir: The folder holding the 13 Northwind CSV files.
        replace: Drop existing Northwind tables first; without it, existing tables are an error.

    Returns:
        Table name → rows loaded.

    Raises:
        FileNotFoundError: a CSV is missing. sqlalchemy.exc.SQLAlchemyError: the database refused.
    """
    url = async_url(url)
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(url)
    dialect = engine.dialect.name
    meta = sa.MetaData()
    data: dict[str, list[dict[str, Any]]] = {}
    for table in TABLES:
        columns, rows = _read(csv_dir, table)
        pk = _PRIMARY_KEYS.get(table, (columns[0],))
        sa.Table(table, meta, *(sa.Column(c, _type(c, dialect), primary_key=c in pk) for c in columns))
        data[table] = [{c: _value(c, v, dialect) for c, v in zip(columns, row)} for row in rows]
    sa.Index("ix_orders_customer_id", meta.tables["orders"].c.customer_id)
    sa.Index("ix_orders_order_date", meta.tables["orders"].c.order_date)
    sa.Index("ix_order_details_product_id", meta.tables["order_details"].c.product_id)
    try:
        async with engine.begin() as conn:
            if replace:
                await conn.run_sync(meta.drop_all)
            await conn.run_sync(meta.create_all, checkfirst=False)
            for table in TABLES:
                if data[table]:
                    await conn.execute(meta.tables[table].insert(), data[table])
    finally:
        await engine.dispose()
    return {t: len(rows) for t, rows in data.items()}
