"""Loading knowledge networks on SQLite and PostgreSQL: a SQL-table source, typed values,
key errors, reloads, the read-only CSV database, and queries over the stored rows."""

from __future__ import annotations

import json
import secrets

import pytest
from sqlalchemy import text

from cairn.app.core.errors import BadInput
from cairn.app.identity import service as identity
from cairn.app.ontology.load import load_network
from cairn.app.ontology.mapping import parse_mapping
from cairn.app.ontology.query import InstanceQuery, query_instances
from cairn.app.ontology.store import OntologyStore

SHOP = """
id: shop
name: Shop
source: {{kind: sql, url: "{url}"}}
object_types:
  - id: item
    name: Item
    table: onto_test_items
    primary_key: [sku, lot]
    properties:
      - {{name: sku, type: string}}
      - {{name: lot, type: integer}}
      - {{name: title, type: string, full_text: true}}
      - {{name: price, type: float}}
      - {{name: active, type: boolean}}
      - {{name: added, type: date}}
"""


async def _workspace(db, name):
    async with db.session() as s:
        return (await identity.create_workspace(s, name=name)).id


async def _items(db, rows):
    async with db.engine.begin() as conn:
        await conn.execute(text("DROP TABLE IF EXISTS onto_test_items"))
        await conn.execute(
            text(
                "CREATE TABLE onto_test_items (sku VARCHAR(20), lot INTEGER, title VARCHAR(100), "
                "price VARCHAR(20), active VARCHAR(5), added VARCHAR(10))"
            )
        )
        for r in rows:
            await conn.execute(
                text("INSERT INTO onto_test_items VALUES (:sku, :lot, :title, :price, :active, :added)"), r
            )


ROWS = [
    {"sku": "05", "lot": 1, "title": "Blue teapot", "price": "12.5", "active": "1", "added": "2024-02-01"},
    {"sku": "05", "lot": 2, "title": "Blue teapot, second lot", "price": "12.5", "active": "0", "added": "2024-03-01"},
    {"sku": "A7", "lot": 1, "title": "Green kettle", "price": "30", "active": "true", "added": None},
]


async def test_sql_table_source_with_composite_key_and_reload(db, db_url):
    ws = await _workspace(db, f"onto-sql-{db.dialect}")
    await _items(db, ROWS)
    mapping = parse_mapping(SHOP.format(url=db_url))
    report = await load_network(db, None, workspace_id=ws, mapping=mapping)
    assert report.instances == {"item": 3} and report.generation == 1 and report.embedded == 0
    store = OntologyStore(None)
    page = await query_instances(
        store,
        db,
        workspace_id=ws,
        q=InstanceQuery("shop", "item", sort=[{"field": "price", "direction": "desc"}], limit=10),
    )
    assert [r["_instanceIdentity"] for r in page.rows] == [
        {"sku": "A7", "lot": 1},
        {"sku": "05", "lot": 1},
        {"sku": "05", "lot": 2},
    ]
    assert page.rows[0]["added"] is None and page.rows[1]["active"] is True and page.rows[2]["active"] is False
    assert page.rows[1]["sku"] == "05" and page.rows[1]["price"] == 12.5
    hits = await query_instances(
        store,
        db,
        workspace_id=ws,
        q=InstanceQuery(
            "shop", "item", condition={"field": "title", "operation": "match", "value": "teapot", "valueFrom": "const"}
        ),
    )
    assert hits.total_count == 2 and all(r["_score"] > 0 for r in hits.rows)
    older = await query_instances(
        store,
        db,
        workspace_id=ws,
        q=InstanceQuery("shop", "item", filters=[{"field": "added", "operation": "<", "value": "2024-02-15"}]),
    )
    assert [r["_instanceIdentity"] for r in older.rows] == [{"sku": "05", "lot": 1}]
    await _items(db, ROWS[:1])
    again = await load_network(db, None, workspace_id=ws, mapping=mapping)
    assert again.generation == 2 and again.instances == {"item": 1}
    page = await query_instances(store, db, workspace_id=ws, q=InstanceQuery("shop", "item"))
    assert page.total_count == 1  # the cached index was rebuilt for the new generation


@pytest.mark.parametrize(
    "rows, message",
    [
        ([{**ROWS[0], "lot": None}], "null primary key"),
        ([ROWS[0], ROWS[0]], "duplicate primary key"),
        ([{**ROWS[0], "price": "cheap"}], "not a valid float"),
        ([{**ROWS[0], "price": "NaN"}], "not a valid float"),
        ([{**ROWS[0], "active": "maybe"}], "not a valid boolean"),
    ],
)
async def test_bad_source_rows_are_refused_naming_the_row(db, db_url, rows, message):
    ws = await _workspace(db, f"onto-bad-{db.dialect}-{secrets.token_hex(4)}")
    await _items(db, rows)
    with pytest.raises(BadInput, match=message):
        await load_network(db, None, workspace_id=ws, mapping=parse_mapping(SHOP.format(url=db_url)))


CSV_MAPPING = """
id: tiny
name: Tiny
object_types:
  - id: t
    name: T
    sql: "{sql}"
    primary_key: [x]
    properties: [{{name: x, type: integer}}]
"""


@pytest.mark.parametrize("sql", ["ATTACH DATABASE ':memory:' AS other", "DELETE FROM a", "CREATE TABLE b (x)"])
async def test_csv_database_is_read_only(db, sql):
    ws = await _workspace(db, f"onto-ro-{db.dialect}-{sql.split()[0]}")
    with pytest.raises(BadInput, match="source query failed"):
        await load_network(
            db, None, workspace_id=ws, mapping=parse_mapping(CSV_MAPPING.format(sql=sql)), files={"a": "x\n1\n"}
        )


@pytest.mark.parametrize(
    "text_, field",
    [
        ("id: 9bad\nname: x\nobject_types: []", "mapping"),
        (
            "id: ok\nname: x\nobject_types: [{id: a, name: A, table: a, primary_key: [y], properties: [{name: x, type: integer}]}]",
            "mapping.object_types.0",
        ),
        (
            "id: ok\nname: x\nobject_types: [{id: a, name: A, table: a, sql: 'select 1', primary_key: [x], "
            "properties: [{name: x, type: integer}]}]",
            "mapping.object_types.0",
        ),
        (
            "id: ok\nname: x\nobject_types: [{id: a, name: A, table: a, primary_key: [x], "
            "properties: [{name: x, type: integer, vector: true}]}]",
            "mapping.object_types.0.properties.0",
        ),
        (
            "id: ok\nname: x\nextra: 1\nobject_types: [{id: a, name: A, table: a, primary_key: [x], "
            "properties: [{name: x, type: integer}]}]",
            "mapping.extra",
        ),
        ("[not, a, mapping]", "mapping"),
    ],
)
def test_mapping_errors_name_the_field(text_, field):
    with pytest.raises(BadInput) as info:
        parse_mapping(text_)
    assert info.value.extra["field"] == field


def test_a_json_mapping_keeps_escaped_astral_characters():
    # PyYAML reads "\ud83c\udf70" as two lone surrogates (a 500 when stored); JSON reads 🍰.
    text = json.dumps(
        {
            "id": "cafe",
            "name": "Caf\u00e9 \U0001f370",
            "source": {"kind": "csv"},
            "object_types": [
                {
                    "id": "cake",
                    "name": "\U0001f370 cakes",
                    "table": "cakes",
                    "primary_key": ["id"],
                    "properties": [{"name": "id", "type": "string"}],
                }
            ],
        }
    )
    assert "\\ud83c\\udf70" in text
    spec = parse_mapping(text)
    assert spec.name == "Caf\u00e9 \U0001f370" and spec.object_types[0].name == "\U0001f370 cakes"
