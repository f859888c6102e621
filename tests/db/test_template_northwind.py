"""The ten Northwind templates (app/templates/northwind.yaml) on Northwind built from
../shared/data/northwind/csv, on SQLite and PostgreSQL (skipped without the shared data)."""

from __future__ import annotations

import time

import pytest

from cairn.app.templates import (
    NORTHWIND_TEMPLATES,
    QueryDatabase,
    QueryParameterInvalid,
    QueryTimeout,
    bind_values,
    check_sql,
    load_catalog,
    parse_specs,
)
from tests.business import StatementCounter, business_url

pytestmark = pytest.mark.shared_data

CATALOG = {d.name: d for d in load_catalog(NORTHWIND_TEMPLATES)}

# template → (parameters, rows expected, first row's checked values)
RUNS = {
    "orders_by_country_and_dates": (
        {"country": "Germany", "start": "1997-01-01", "end": "1997-03-31"},
        9,
        {"order_id": 10407, "order_date": "1997-01-07", "customer": "Ottilies Käseladen"},
    ),
    "top_products_by_revenue": ({"top": 5}, 5, {"product_name": "Côte de Blaye", "revenue": 141396.74, "units": 623}),
    "monthly_sales_of_category": (
        {"category": "Beverages", "start": "1997-01-01", "end": "1997-06-30"},
        6,
        {"month": "1997-01", "revenue": 21904.16, "orders": 8},
    ),
    "customers_in_countries": ({"countries": ["Germany", "France"]}, 22, {"customer_id": "BLONP"}),
    "low_stock_products": ({"max_stock": 5, "include_discontinued": True}, 9, {"product_name": "Alice Mutton"}),
    "heavy_freight_by_shipper": (
        {"shipper": "Speedy Express", "min_freight": 300.5},
        5,
        {"order_id": 10430, "freight": 458.78},
    ),
    "employee_sales": (
        {"start": "1997-01-01", "end": "1997-12-31"},
        9,
        {"employee": "Margaret Peacock", "orders": 81, "revenue": 128809.79},
    ),
    "customer_order_history": ({"customer_id": "ALFKI"}, 6, {"order_id": 10643, "total": 814.5}),
    "products_in_price_range": (
        {"categories": ["Beverages", "Seafood"], "min_price": 10, "max_price": 20},
        13,
        {"product_name": "Spegesild", "unit_price": 12.0},
    ),
    "late_shipments": ({}, 37, {"order_id": 10970, "shipped_date": "1998-04-24"}),
}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def northwind_url(request, tmp_path_factory):
    with business_url(request.param, tmp_path_factory.mktemp(f"nw-{request.param}"), "northwind") as url:
        yield url


@pytest.fixture
async def qdb(northwind_url):
    database = QueryDatabase(northwind_url)
    yield database
    await database.engine.dispose()


def test_the_catalog_has_ten_templates():
    assert len(CATALOG) == 10 and set(CATALOG) == set(RUNS)


@pytest.mark.parametrize("name", sorted(RUNS))
async def test_each_template_is_approved_and_runs(qdb, name):
    d = CATALOG[name]
    check_sql(d.sql, d.parameters, qdb.dialect)
    params, n, first = RUNS[name]
    result = await qdb.run(d.sql, d.parameters, bind_values(d.parameters, params), timeout_seconds=10, max_rows=1000)
    assert len(result.rows) == n and not result.truncated
    assert {k: result.rows[0][k] for k in first} == first


# one injection attempt per parameter type, on the Northwind templates
INJECTIONS = [
    ("orders_by_country_and_dates", "country", "x' OR 1=1 --", "rows:0"),
    ("customer_order_history", "customer_id", "ALFKI' OR 'A'='A", "TOO_LONG"),
    ("top_products_by_revenue", "top", "5; DROP TABLE orders", "WRONG_TYPE"),
    ("heavy_freight_by_shipper", "min_freight", "0 OR 1=1", "WRONG_TYPE"),
    ("low_stock_products", "include_discontinued", "1=1", "WRONG_TYPE"),
    ("late_shipments", "start", "1996-01-01' OR '1'='1", "BAD_FORMAT"),
    ("monthly_sales_of_category", "category", "Beverages' OR '1'='1", "NOT_ALLOWED"),
    ("customers_in_countries", "countries", ["x') OR (1=1"], "rows:0"),
    ("products_in_price_range", "categories", ["Seafood' --"], "NOT_ALLOWED"),
]
BASE = {
    "orders_by_country_and_dates": {"start": "1996-01-01", "end": "1998-12-31"},
    "heavy_freight_by_shipper": {"shipper": "Speedy Express"},
    "monthly_sales_of_category": {},
}


@pytest.mark.parametrize(("name", "param", "value", "expected"), INJECTIONS)
async def test_injection_in_every_parameter_type(qdb, name, param, value, expected):
    d = CATALOG[name]
    counter = StatementCounter(qdb)
    values = {**BASE.get(name, {}), param: value}
    if expected.startswith("rows:"):
        result = await qdb.run(d.sql, d.parameters, bind_values(d.parameters, values), timeout_seconds=10, max_rows=100)
        assert len(result.rows) == int(expected[5:])
    else:
        with pytest.raises(QueryParameterInvalid) as info:
            await qdb.run(d.sql, d.parameters, bind_values(d.parameters, values), timeout_seconds=10, max_rows=100)
        assert (info.value.extra["parameter"], info.value.extra["reason"]) == (param, expected)
        assert counter.statements == []
    n = await qdb.run("SELECT COUNT(*) AS n FROM orders", (), {}, timeout_seconds=5, max_rows=1)
    assert n.rows == [{"n": 830}]


async def test_a_long_query_is_stopped_at_the_timeout(qdb):
    """2,155³ ≈ 10¹⁰ joined rows: minutes of work on these machines; the 0.25 s timeout stops
    it. The bound only shows the query was cut short, far below its own run time, not how
    fast (a loaded machine, another suite on the same PostgreSQL, took 6.5 s to connect,
    set the timeout and cancel)."""
    sql = "SELECT COUNT(*) AS n FROM order_details a, order_details b, order_details c"
    check_sql(sql, (), qdb.dialect)
    started = time.perf_counter()
    with pytest.raises(QueryTimeout):
        await qdb.run(sql, (), {}, timeout_seconds=0.25, max_rows=1)
    assert time.perf_counter() - started < 30.0


async def test_all_orders_hit_the_row_cap(qdb):
    specs = parse_specs([])
    result = await qdb.run("SELECT order_id FROM orders ORDER BY order_id", specs, {}, timeout_seconds=5, max_rows=500)
    assert result.truncated and len(result.rows) == 500
    assert result.notices[0].code == "QUERY_ROW_CAP_REACHED"
    assert result.rows[0] == {"order_id": 10248}
