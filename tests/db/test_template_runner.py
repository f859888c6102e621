"""Running templates on a business database (SQLite and PostgreSQL; a tiny table made here, no
shared data): bound parameters and injection attempts, the timeout, the row cap, read-only."""

from __future__ import annotations

import time

import pytest
from toon_format import decode

from cairn.app.templates import (
    QueryDatabase,
    QueryFailed,
    QueryParameterInvalid,
    QueryTimeout,
    bind_values,
    check_sql,
    parse_specs,
    toon_rows,
)
from tests.business import TINY_SQL, StatementCounter, business_url

SLOW = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) SELECT COUNT(*) AS n FROM c"
)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def tiny_url(request, tmp_path_factory):
    with business_url(request.param, tmp_path_factory.mktemp(f"tiny-{request.param}")) as url:
        yield url


@pytest.fixture
async def qdb(tiny_url):
    database = QueryDatabase(tiny_url)
    yield database
    await database.engine.dispose()


async def run(qdb: QueryDatabase, sql: str, declarations: list, values: dict, *, timeout=5.0, max_rows=100):
    """The path of runQueryTemplate below the service: approve-check, check values, run."""
    specs = parse_specs(declarations)
    check_sql(sql, specs, qdb.dialect)
    return await qdb.run(sql, specs, bind_values(specs, values), timeout_seconds=timeout, max_rows=max_rows)


async def count_items(qdb: QueryDatabase) -> int:
    return (await qdb.run("SELECT COUNT(*) AS n FROM items", (), {}, timeout_seconds=5, max_rows=1)).rows[0]["n"]


# (declaration, SQL condition, injection value, expected: "rows:<n>" or the coded reason)
INJECTIONS = [
    ({"name": "v", "type": "string", "maxLength": 100}, "name = :v", "x' OR '1'='1", "rows:0"),
    ({"name": "v", "type": "string", "maxLength": 100}, "name = :v", "apple'; DROP TABLE items; --", "rows:0"),
    ({"name": "v", "type": "string", "maxLength": 100}, "name = :v", "it's", "rows:1"),
    ({"name": "v", "type": "integer", "min": 0, "max": 10}, "id = :v", "1 OR 1=1", "WRONG_TYPE"),
    ({"name": "v", "type": "float", "min": 0, "max": 10}, "price >= :v", "0; DROP TABLE items", "WRONG_TYPE"),
    ({"name": "v", "type": "boolean"}, "fresh = :v", "true OR 1=1", "WRONG_TYPE"),
    ({"name": "v", "type": "date"}, "sold_on >= :v", "2024-01-01' OR '1'='1", "BAD_FORMAT"),
    ({"name": "v", "type": "enum", "values": ["apple", "banana"]}, "name = :v", "apple' --", "NOT_ALLOWED"),
    (
        {"name": "v", "type": "list", "items": {"type": "string", "maxLength": 40}, "maxItems": 5},
        "name IN :v",
        ["x') OR ('1'='1", "apple"],
        "rows:1",
    ),
    (
        {"name": "v", "type": "list", "items": {"type": "integer", "min": 0, "max": 9}, "maxItems": 5},
        "id IN :v",
        [1, "2) OR (1=1"],
        "WRONG_TYPE",
    ),
]


@pytest.mark.parametrize(("decl", "cond", "value", "expected"), INJECTIONS)
async def test_injection_returns_data_or_a_coded_error(qdb, decl, cond, value, expected):
    counter = StatementCounter(qdb)
    sql = f"{TINY_SQL} WHERE {cond} ORDER BY id"
    if expected.startswith("rows:"):
        result = await run(qdb, sql, [decl], {"v": value})
        assert len(result.rows) == int(expected[5:])
    else:
        with pytest.raises(QueryParameterInvalid) as info:
            await run(qdb, sql, [decl], {"v": value})
        assert info.value.extra["reason"] == expected and info.value.extra["parameter"] == "v"
        assert counter.statements == [], "a refused value must not reach the database"
    assert await count_items(qdb) == 4


async def test_injection_in_a_parameter_name_runs_nothing(qdb):
    counter = StatementCounter(qdb)
    decl = {"name": "v", "type": "integer", "min": 0, "max": 10}
    with pytest.raises(QueryParameterInvalid) as info:
        await run(qdb, f"{TINY_SQL} WHERE id = :v", [decl], {"v": 1, "v); DROP TABLE items; --": 1})
    assert info.value.extra["reason"] == "UNKNOWN"
    assert counter.statements == []


async def test_typed_values_bind(qdb):
    decls = [
        {"name": "since", "type": "date"},
        {"name": "fresh", "type": "boolean"},
        {"name": "min_price", "type": "float", "min": 0, "max": 10},
    ]
    sql = f"{TINY_SQL} WHERE sold_on >= :since AND fresh = :fresh AND price >= :min_price ORDER BY id"
    result = await run(qdb, sql, decls, {"since": "2024-02-01", "fresh": True, "min_price": 1})
    assert [r["name"] for r in result.rows] == ["cherry"]
    assert [c.name for c in result.columns] == ["id", "name", "price", "sold_on", "fresh"]
    types = {c.name: c.type for c in result.columns}
    assert types["id"] == "integer" and types["price"] == "float" and types["name"] == "string"
    assert types["sold_on"] == ("string" if qdb.dialect == "sqlite" else "date")
    assert result.rows[0]["sold_on"] == "2024-03-15"
    assert decode(toon_rows(result.rows))["rows"][0]["name"] == "cherry"


async def test_slow_query_is_stopped_at_the_timeout(qdb):
    started = time.perf_counter()
    with pytest.raises(QueryTimeout) as info:
        await run(qdb, SLOW, [], {}, timeout=0.3)
    elapsed = time.perf_counter() - started
    assert info.value.extensions() == {"code": "QUERY_TIMEOUT", "limit": 0.3, "field": "timeoutSeconds"}
    assert info.value.http_status == 504
    assert elapsed < 2.0, f"stopped after {elapsed:.2f} s"
    assert await count_items(qdb) == 4  # the connection is usable afterwards


@pytest.mark.parametrize(("cap", "truncated"), [(24, True), (25, False), (10, True)])
async def test_row_cap_is_a_coded_notice(qdb, cap, truncated):
    sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 25) SELECT x FROM c ORDER BY x"
    result = await run(qdb, sql, [], {}, max_rows=cap)
    assert result.truncated is truncated
    assert len(result.rows) == min(cap, 25) and result.row_cap == cap
    codes = [n.code for n in result.notices]
    assert codes == (["QUERY_ROW_CAP_REACHED"] if truncated else [])
    if truncated:
        assert f"{cap:,}" in result.notices[0].message


@pytest.mark.parametrize("sql", ["DELETE FROM items", "UPDATE items SET price = 0", "DROP TABLE items"])
async def test_the_transaction_is_read_only_even_without_the_check(qdb, sql):
    with pytest.raises(QueryFailed) as info:
        await qdb.run(sql, (), {}, timeout_seconds=5, max_rows=10)
    assert info.value.code == "QUERY_TEMPLATE_FAILED"
    assert sql.split()[0] not in info.value.message  # no SQL text in the error
    assert await count_items(qdb) == 4


async def test_duplicate_column_names_are_renamed_with_a_notice(qdb):
    result = await run(qdb, "SELECT id, id FROM items ORDER BY id", [], {}, max_rows=1)
    assert [c.name for c in result.columns] == ["id", "id_2"]
    assert "DUPLICATE_COLUMN_RENAMED" in [n.code for n in result.notices]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_an_unreachable_business_database_is_503(tmp_path, backend):
    from cairn.app.templates import TemplatesDatabaseUnavailable
    from tests.conftest import PG_ADMIN_URL

    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'missing.db'}"
    else:
        url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/cairn_no_such_database"
    qdb = QueryDatabase(url)
    try:
        with pytest.raises(TemplatesDatabaseUnavailable) as info:
            await qdb.run("SELECT 1 AS one", (), {}, timeout_seconds=5, max_rows=1)
    finally:
        await qdb.engine.dispose()
    assert info.value.http_status == 503 and info.value.code == "TEMPLATES_DATABASE_UNAVAILABLE"
    assert not (tmp_path / "missing.db").exists()  # a SQLite business database is opened read-only
