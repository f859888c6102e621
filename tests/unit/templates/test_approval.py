"""The approval check (sqlglot): what a template's SQL may and may not be, on both dialects."""

from __future__ import annotations

import pytest

from cairn.app.templates import QueryTemplateRefused
from cairn.app.templates.approval import check_sql, template_digest
from cairn.app.templates.params import parse_specs

P = parse_specs(
    [
        {"name": "country", "type": "string", "maxLength": 15},
        {"name": "countries", "type": "list", "items": {"type": "string", "maxLength": 15}, "maxItems": 5},
    ]
)
ONE = parse_specs([{"name": "country", "type": "string", "maxLength": 15}])
DIALECTS = ["sqlite", "postgres"]

GOOD = [
    ("SELECT order_id FROM orders WHERE ship_country = :country", ONE),
    ("SELECT order_id FROM orders WHERE ship_country = :country;", ONE),
    (
        "WITH o AS (SELECT * FROM orders WHERE ship_country = :country) "
        "SELECT c.company_name, COUNT(*) AS n FROM o JOIN customers c ON c.customer_id = o.customer_id "
        "GROUP BY c.company_name ORDER BY n DESC",
        ONE,
    ),
    (
        "SELECT order_id FROM orders WHERE ship_country = :country OR ship_country IN :countries "
        "UNION SELECT 1 FROM orders WHERE ship_country = :country",
        P,
    ),
    (
        "SELECT ROUND(SUM(freight), 2) AS f, COALESCE(MAX(ship_region), '') AS r FROM orders WHERE ship_city = :country",
        ONE,
    ),
]

BAD = [
    ("SELECT 1; DROP TABLE orders", ONE, "exactly one statement"),
    ("SELECT :country; SELECT 2", ONE, "exactly one statement"),
    ("DELETE FROM orders WHERE ship_country = :country", ONE, "must be a SELECT"),
    ("UPDATE orders SET freight = 0 WHERE ship_country = :country", ONE, "must be a SELECT"),
    ("INSERT INTO orders (order_id) SELECT :country", ONE, "must be a SELECT"),
    ("DROP TABLE orders", (), "must be a SELECT"),
    ("CREATE TABLE x AS SELECT * FROM orders WHERE ship_country = :country", ONE, "must be a SELECT"),
    ("SELECT * INTO copy FROM orders WHERE ship_country = :country", ONE, "INTO is not allowed"),
    ("SELECT * FROM orders WHERE ship_country = :country FOR UPDATE", ONE, "LOCK is not allowed"),
    ("SELECT pg_sleep(10), :country", ONE, "pg_sleep() is refused"),
    ("SELECT set_config('a', 'b', false), :country", ONE, "set_config() is refused"),
    ("SELECT nextval('s'), :country", ONE, "nextval() is refused"),
    ("SELECT load_extension('x'), :country", ONE, "load_extension() is refused"),
    ("SELECT my_udf(order_id) FROM orders WHERE ship_country = :country", ONE, "my_udf() is not a built-in"),
    ("SELECT * FROM pg_catalog.pg_user WHERE usename = :country", ONE, "system catalog"),
    ("SELECT * FROM sqlite_master WHERE name = :country", ONE, "system catalog"),
    ("SELECT * FROM orders WHERE ship_country = ?", (), "positional placeholder"),
    ("SELECT * FROM orders WHERE ship_country = :other", ONE, ":other is used in the SQL but not declared"),
    ("SELECT * FROM orders", ONE, "declared but the SQL never uses :country"),
    ("SELECT * FROM orders WHERE ship_country = :countries AND ship_city = :country", P, "must be used as `column IN"),
    ("SELECT * FROM orders WHERE ship_country IN :country AND ship_city IN :countries", P, "needs a list parameter"),
    ("SELECT ':country' AS x FROM orders", (), "string literal or a comment"),
    ("SELECT order_id FROM orders -- :country\n", (), "string literal or a comment"),
    ("SELEC order_id FROM orders", (), "does not parse"),
    ("", ONE, "empty"),
]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(("sql", "specs"), GOOD)
def test_good_templates_pass(sql, specs, dialect):
    check_sql(sql, specs, dialect)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(("sql", "specs", "needle"), BAD)
def test_bad_templates_are_refused(sql, specs, needle, dialect):
    with pytest.raises(QueryTemplateRefused) as info:
        check_sql(sql, specs, dialect)
    ext = info.value.extensions()
    assert ext["code"] == "QUERY_TEMPLATE_REFUSED"
    assert any(needle in v for v in ext["violations"]), ext["violations"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_data_modifying_cte_is_refused(dialect):
    sql = "WITH gone AS (DELETE FROM orders WHERE ship_country = :country RETURNING *) SELECT * FROM gone"
    with pytest.raises(QueryTemplateRefused) as info:
        check_sql(sql, ONE, dialect)
    assert any("DELETE is not allowed" in v for v in info.value.extra["violations"])


def test_digest_changes_with_sql_or_parameters():
    base = template_digest("SELECT :country", ONE)
    assert template_digest("SELECT :country ", ONE) != base
    wider = parse_specs([{"name": "country", "type": "string", "maxLength": 16}])
    assert template_digest("SELECT :country", wider) != base
    assert template_digest("SELECT :country", ONE) == base
