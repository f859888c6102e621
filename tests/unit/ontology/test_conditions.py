"""Conditions: every property type × every operator is allowed or refused with a coded error
(the table below is written out by hand, not derived from the code), value checks, and the
TOON encoding of rows with awkward strings."""

from __future__ import annotations

import pytest

from cairn.app.ontology.conditions import parse_condition
from cairn.app.ontology.query import toon_rows
from cairn.app.ontology.types import ALL_OPS, InvalidCondition, LikePattern

PROPS = {
    "s": {"name": "s", "type": "string"},
    "ft": {"name": "ft", "type": "string", "fullText": True},
    "vec": {"name": "vec", "type": "string", "vector": True},
    "i": {"name": "i", "type": "integer"},
    "f": {"name": "f", "type": "float"},
    "b": {"name": "b", "type": "boolean"},
    "d": {"name": "d", "type": "date"},
    "dt": {"name": "dt", "type": "datetime"},
}
SAMPLE = {"s": "x", "ft": "x", "vec": "x", "i": 3, "f": 1.5, "b": True, "d": "1997-01-02", "dt": "1997-01-02T03:04:05Z"}
COMMON = {"==", "!=", "in", "not_in", "exist", "not_exist"}
ORDERED = COMMON | {">", ">=", "<", "<=", "range"}
STRING = COMMON | {"like", "not_like", "prefix"}
ALLOWED = {
    "s": STRING,
    "ft": STRING | {"match", "multi_match"},
    "vec": STRING | {"knn"},
    "i": ORDERED,
    "f": ORDERED,
    "b": COMMON,
    "d": ORDERED,
    "dt": ORDERED,
}


def _leaf(prop: str, op: str) -> dict:
    value = SAMPLE[prop]
    leaf = {"field": prop, "operation": op}
    if op in ("exist", "not_exist"):
        return leaf
    if op in ("in", "not_in"):
        value = [value]
    elif op == "range":
        value = [value, value]
    elif op in ("like", "not_like", "prefix", "match", "multi_match", "knn"):
        value = "x%"
    leaf.update(value=value, valueFrom="CONST")
    if op == "knn":
        leaf.update(limitKey="k", limitValue=5)
    return leaf


CASES = [(p, op) for p in PROPS for op in ALL_OPS]


def test_the_table_covers_every_operator():
    assert set(ALL_OPS) == ORDERED | STRING | {"match", "multi_match", "knn"}


@pytest.mark.parametrize("prop, op", CASES)
def test_type_by_operator(prop, op):
    if op in ALLOWED[prop]:
        node = parse_condition(_leaf(prop, op), PROPS, vectors_available=True)
        assert node.op == op and node.field == prop
    else:
        with pytest.raises(InvalidCondition) as info:
            parse_condition(_leaf(prop, op), PROPS, vectors_available=True)
        assert info.value.code == "INVALID_CONDITION"
        assert info.value.extra == {"field": prop, "operation": op}
        assert f"'{prop}'" in info.value.message and f"'{op}'" in info.value.message


def test_knn_needs_a_loaded_model_and_k():
    with pytest.raises(InvalidCondition, match="not supported"):
        parse_condition(_leaf("vec", "knn"), PROPS, vectors_available=False)
    leaf = _leaf("vec", "knn")
    del leaf["limitKey"]
    with pytest.raises(InvalidCondition, match="limitKey"):
        parse_condition(leaf, PROPS, vectors_available=True)
    with pytest.raises(InvalidCondition, match="only to knn"):
        parse_condition({**_leaf("i", "=="), "limitKey": "k", "limitValue": 3}, PROPS, vectors_available=True)


@pytest.mark.parametrize(
    "leaf, message",
    [
        ({"field": "i", "operation": "==", "value": 3}, "go together"),
        ({"field": "i", "operation": "==", "valueFrom": "CONST"}, "go together"),
        ({"field": "i", "operation": "==", "value": 3, "valueFrom": "FIELD"}, "CONST"),
        ({"field": "i", "operation": "==", "value": 1.5, "valueFrom": "CONST"}, "integer"),
        ({"field": "i", "operation": "==", "value": "3", "valueFrom": "CONST"}, "number"),
        ({"field": "b", "operation": "==", "value": 1, "valueFrom": "CONST"}, "true or false"),
        ({"field": "dt", "operation": ">", "value": "1997-01-02T03:04:05", "valueFrom": "CONST"}, "timezone"),
        ({"field": "d", "operation": ">", "value": "02/01/1997", "valueFrom": "CONST"}, "ISO 8601"),
        ({"field": "i", "operation": "range", "value": [5, 1], "valueFrom": "CONST"}, "above"),
        ({"field": "i", "operation": "in", "value": [], "valueFrom": "CONST"}, "list of 1"),
        ({"field": "i", "operation": "exist", "value": 1, "valueFrom": "CONST"}, "takes no value"),
        ({"operation": "and", "subConditions": []}, "non-empty"),
        (
            {"operation": "or", "field": "i", "subConditions": [{"field": "i", "operation": "exist"}]},
            "only subConditions",
        ),
        ({"field": "nope", "operation": "==", "value": 1, "valueFrom": "CONST"}, "not a property"),
        ({"field": "i", "operation": "~=", "value": 1, "valueFrom": "CONST"}, "unknown operator"),
    ],
)
def test_value_and_shape_errors(leaf, message):
    with pytest.raises(InvalidCondition, match=message):
        parse_condition(leaf, PROPS, vectors_available=True)


def test_depth_limit():
    node = {"field": "i", "operation": "exist"}
    for _ in range(8):
        node = {"operation": "and", "subConditions": [node]}
    with pytest.raises(InvalidCondition, match="8 levels"):
        parse_condition(node, PROPS, vectors_available=True)


def test_like_is_sql_like():
    assert LikePattern("a%c").match("ABBC") and not LikePattern("a_c").match("abbc")
    assert LikePattern("50\\%").match("50%") and not LikePattern("50\\%").match("500")


def test_toon_round_trips_awkward_strings():
    from toon_format import decode

    awkward = [
        "",
        "true",
        "false",
        "null",
        "05",
        "1e3",
        "a:b",
        "[2]: x",
        "-lead",
        "#hash",
        " padded ",
        "a,b",
        'quote"d',
        "line\nbreak",
        "tab\tbed",
        "ünï",
        "{x}",
    ]
    rows = [
        {"k": i, "text": s, "n": None, "f": 1.25, "b": i % 2 == 0, "_instanceIdentity": {"k": i}}
        for i, s in enumerate(awkward)
    ]
    text = toon_rows(rows)
    assert decode(text) == {"rows": rows}
    flat = [{"k": i, "text": s} for i, s in enumerate(awkward)]
    assert decode(toon_rows(flat)) == {"rows": flat}
    assert toon_rows(flat).startswith("rows[17]{k,text}:")


EVAL_ROWS = [
    {"k": 1, "s": "Alpha", "i": 5, "d": "1997-01-01", "b": True},
    {"k": 2, "s": "alpine", "i": 10, "d": "1998-06-30", "b": False},
    {"k": 3, "s": None, "i": None, "d": None, "b": None},
    {"k": 4, "s": "Beta_1", "i": -2, "d": "1996-12-31", "b": True},
]
EVAL_PROPS = [
    {"name": "k", "type": "integer"},
    {"name": "s", "type": "string", "fullText": True},
    {"name": "i", "type": "integer"},
    {"name": "d", "type": "date"},
    {"name": "b", "type": "boolean"},
]


@pytest.mark.parametrize(
    "leaf, keys",
    [
        ({"field": "i", "operation": "==", "value": 5}, {1}),
        ({"field": "i", "operation": "!=", "value": 5}, {2, 3, 4}),  # null satisfies negations
        ({"field": "i", "operation": ">", "value": 5}, {2}),
        ({"field": "i", "operation": ">=", "value": 5}, {1, 2}),
        ({"field": "i", "operation": "<", "value": 5}, {4}),
        ({"field": "i", "operation": "<=", "value": 5}, {1, 4}),
        ({"field": "i", "operation": "range", "value": [-2, 5]}, {1, 4}),
        ({"field": "i", "operation": "in", "value": [10, 99]}, {2}),
        ({"field": "i", "operation": "not_in", "value": [10, 99]}, {1, 3, 4}),
        ({"field": "i", "operation": "exist"}, {1, 2, 4}),
        ({"field": "i", "operation": "not_exist"}, {3}),
        ({"field": "s", "operation": "like", "value": "alp%"}, {1, 2}),
        ({"field": "s", "operation": "like", "value": "Beta\\_1"}, {4}),
        ({"field": "s", "operation": "not_like", "value": "alp%"}, {3, 4}),
        ({"field": "s", "operation": "prefix", "value": "Al"}, {1}),
        ({"field": "s", "operation": "match", "value": "alpha"}, {1}),
        ({"field": "d", "operation": ">=", "value": "1997-01-01"}, {1, 2}),
        ({"field": "b", "operation": "==", "value": False}, {2}),
    ],
)
async def test_operator_semantics(leaf, keys):
    from cairn.app.core.models import ObjectType
    from cairn.app.ontology.conditions import evaluate
    from cairn.app.ontology.store import _build

    ot = ObjectType(workspace_id="w", kn_id="kn", ot_id="t", name="T", primary_key=["k"], properties=EVAL_PROPS)
    tindex = _build(ot, [(str(r["k"]), r, {}) for r in EVAL_ROWS])
    if "value" in leaf:
        leaf = {**leaf, "valueFrom": "CONST"}
    node = parse_condition(leaf, tindex.props, vectors_available=False)
    rows, scores = await evaluate(node, tindex, store=None)
    assert {tindex.rows[p]["k"] for p in rows} == keys
    assert bool(scores) == (leaf["operation"] == "match")


def _like_reference(pattern: str, text: str) -> bool:
    """LIKE by dynamic programming over (pattern, text) positions — slow, obviously right."""
    import functools

    items, i = [], 0
    while i < len(pattern):
        if pattern[i] == "\\" and i + 1 < len(pattern):
            items.append(("lit", pattern[i + 1].lower()))
            i += 2
            continue
        items.append(("any",) if pattern[i] == "%" else ("one",) if pattern[i] == "_" else ("lit", pattern[i].lower()))
        i += 1
    t = text.lower()

    @functools.cache
    def go(a: int, b: int) -> bool:
        if a == len(items):
            return b == len(t)
        kind = items[a][0]
        if kind == "any":
            return go(a + 1, b) or (b < len(t) and go(a, b + 1))
        if b == len(t):
            return False
        return (kind == "one" or items[a][1] == t[b]) and go(a + 1, b + 1)

    return go(0, 0)


def test_like_patterns_equal_the_reference_on_random_cases():
    import random

    rng = random.Random(5)
    for _ in range(3000):
        pattern = "".join(rng.choice("ab%_\\") for _ in range(rng.randint(0, 7)))
        text = "".join(rng.choice("abAB%_\\") for _ in range(rng.randint(0, 9)))
        assert LikePattern(pattern).match(text) == _like_reference(pattern, text), (pattern, text)


def test_many_wildcards_do_not_backtrack_exponentially():
    text = "Education includes a BA in psychology from Colorado State University in 1970. " * 30
    assert LikePattern("%_%_%_%_%_%_%_%_%Z").match(text) is False
    assert LikePattern("%_%_%_%_%_%_%_%_%1970. ").match(text) is True


def test_an_integer_beyond_the_double_range_on_a_float_property_is_an_invalid_condition():
    from cairn.app.ontology.types import coerce_query_value

    with pytest.raises(InvalidCondition) as e:
        coerce_query_value(10**400, "float", field="UnitPrice", operation=">")
    assert "UnitPrice" in e.value.message and "double range" in e.value.message
