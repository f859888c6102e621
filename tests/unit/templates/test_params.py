"""Typed template parameters: declarations and the validation matrix of agent values (no database)."""

from __future__ import annotations

from datetime import date

import pytest

from cairn.app.templates.params import (
    QueryParameterInvalid,
    QueryTemplateInvalid,
    bind_values,
    parse_specs,
    specs_to_json,
)

SPECS = parse_specs(
    [
        {"name": "country", "type": "string", "maxLength": 15, "minLength": 2},
        {"name": "code", "type": "string", "maxLength": 5, "pattern": "[A-Z]{5}", "default": "ALFKI"},
        {"name": "top", "type": "integer", "min": 1, "max": 50, "default": 10},
        {"name": "min_price", "type": "float", "min": 0, "max": 1000, "default": 0},
        {"name": "discontinued", "type": "boolean", "default": False},
        {"name": "start", "type": "date", "min": "1996-01-01", "max": "1998-12-31", "default": "1996-01-01"},
        {"name": "category", "type": "enum", "values": ["Beverages", "Condiments"], "default": "Beverages"},
        {
            "name": "countries",
            "type": "list",
            "items": {"type": "string", "maxLength": 15},
            "maxItems": 3,
            "default": ["Germany"],
        },
        {
            "name": "ids",
            "type": "list",
            "items": {"type": "integer", "min": 1, "max": 100},
            "maxItems": 2,
            "default": [1],
        },
    ]
)

# (parameters sent, parameter named, reason, limit) — one row per rule and type
MATRIX = [
    ({"country": 5}, "country", "WRONG_TYPE", None),
    ({"country": "G"}, "country", "TOO_SHORT", 2),
    ({"country": "G" * 16}, "country", "TOO_LONG", 15),
    ({"country": "Ge\x00"}, "country", "BAD_FORMAT", None),
    ({"country": "DE", "code": "alfki"}, "code", "PATTERN", "[A-Z]{5}"),
    ({"country": "DE", "top": "5"}, "top", "WRONG_TYPE", None),
    ({"country": "DE", "top": 5.0}, "top", "WRONG_TYPE", None),
    ({"country": "DE", "top": True}, "top", "WRONG_TYPE", None),
    ({"country": "DE", "top": 0}, "top", "TOO_SMALL", 1),
    ({"country": "DE", "top": 51}, "top", "TOO_LARGE", 50),
    ({"country": "DE", "top": 2**70}, "top", "TOO_LARGE", 50),
    ({"country": "DE", "min_price": "1.5"}, "min_price", "WRONG_TYPE", None),
    ({"country": "DE", "min_price": -0.01}, "min_price", "TOO_SMALL", 0.0),
    ({"country": "DE", "min_price": 1000.5}, "min_price", "TOO_LARGE", 1000.0),
    ({"country": "DE", "min_price": float("nan")}, "min_price", "WRONG_TYPE", None),
    ({"country": "DE", "discontinued": "true"}, "discontinued", "WRONG_TYPE", None),
    ({"country": "DE", "discontinued": 1}, "discontinued", "WRONG_TYPE", None),
    ({"country": "DE", "start": 19970101}, "start", "WRONG_TYPE", None),
    ({"country": "DE", "start": "1997-1-1"}, "start", "BAD_FORMAT", "YYYY-MM-DD"),
    ({"country": "DE", "start": "19970101"}, "start", "BAD_FORMAT", "YYYY-MM-DD"),
    ({"country": "DE", "start": "1997-02-30"}, "start", "BAD_FORMAT", "YYYY-MM-DD"),
    ({"country": "DE", "start": "1995-12-31"}, "start", "TOO_SMALL", "1996-01-01"),
    ({"country": "DE", "start": "1999-01-01"}, "start", "TOO_LARGE", "1998-12-31"),
    ({"country": "DE", "category": "beverages"}, "category", "NOT_ALLOWED", ["Beverages", "Condiments"]),
    ({"country": "DE", "countries": "Germany"}, "countries", "WRONG_TYPE", None),
    ({"country": "DE", "countries": []}, "countries", "TOO_FEW", 1),
    ({"country": "DE", "countries": ["a", "b", "c", "d"]}, "countries", "TOO_MANY", 3),
    ({"country": "DE", "countries": ["Germany", 7]}, "countries", "WRONG_TYPE", None),
    ({"country": "DE", "ids": [1, 101]}, "ids", "TOO_LARGE", 100),
    ({}, "country", "MISSING", None),
    ({"country": None}, "country", "MISSING", None),
    ({"country": "DE", "cuntry": "x"}, "cuntry", "UNKNOWN", None),
]


@pytest.mark.parametrize(("values", "name", "reason", "limit"), MATRIX)
def test_validation_matrix(values, name, reason, limit):
    with pytest.raises(QueryParameterInvalid) as info:
        bind_values(SPECS, values)
    ext = info.value.extensions()
    assert ext["code"] == "QUERY_PARAMETER_INVALID"
    assert ext["parameter"] == name
    assert ext["reason"] == reason
    if limit is not None:
        assert ext["limit"] == limit
    assert name in info.value.message


def test_list_item_error_names_the_index():
    with pytest.raises(QueryParameterInvalid) as info:
        bind_values(SPECS, {"country": "DE", "countries": ["Germany", "x" * 16]})
    assert info.value.extra["field"] == "parameters.countries[1]"
    assert info.value.extra["limit"] == 15


def test_valid_values_and_defaults():
    out = bind_values(SPECS, {"country": "Germany", "start": "1997-03-01", "ids": [3, 4], "min_price": 2})
    assert out == {
        "country": "Germany",
        "code": "ALFKI",
        "top": 10,
        "min_price": 2.0,
        "discontinued": False,
        "start": date(1997, 3, 1),
        "category": "Beverages",
        "countries": ["Germany"],
        "ids": [3, 4],
    }
    assert isinstance(out["min_price"], float)


def test_parameters_must_be_an_object():
    with pytest.raises(QueryParameterInvalid) as info:
        bind_values(SPECS, ["Germany"])
    assert info.value.extra["reason"] == "WRONG_TYPE"


def test_declarations_round_trip():
    assert parse_specs(specs_to_json(SPECS)) == SPECS


BAD_DECLARATIONS = [
    ([{"name": "x", "type": "text", "maxLength": 5}], "parameters[0].type"),
    ([{"name": "X", "type": "string", "maxLength": 5}], "parameters[0].name"),
    ([{"name": "x;drop", "type": "string", "maxLength": 5}], "parameters[0].name"),
    ([{"name": "x", "type": "string"}], "parameters[0].maxLength"),
    ([{"name": "x", "type": "integer", "min": 1}], "parameters[0].max"),
    ([{"name": "x", "type": "integer", "min": 5, "max": 1}], "parameters[0].min"),
    ([{"name": "x", "type": "float", "min": 0, "max": float("inf")}], "parameters[0].max"),
    ([{"name": "x", "type": "enum", "values": []}], "parameters[0].values"),
    ([{"name": "x", "type": "enum", "values": ["a", "a"]}], "parameters[0].values"),
    ([{"name": "x", "type": "list", "items": {"type": "list"}, "maxItems": 2}], "parameters[0].items.type"),
    ([{"name": "x", "type": "list", "items": {"type": "string", "maxLength": 3}}], "parameters[0].maxItems"),
    ([{"name": "x", "type": "string", "maxLength": 3, "pattern": "("}], "parameters[0].pattern"),
    ([{"name": "x", "type": "string", "maxLength": 3, "default": "toolong"}], "parameters[0].default"),
    ([{"name": "x", "type": "string", "maxLength": 3, "sql": "DROP"}], "parameters[0]"),
    ([{"name": "x", "type": "boolean"}, {"name": "x", "type": "boolean"}], "parameters[1].name"),
    ([{"name": f"p{i}", "type": "boolean"} for i in range(21)], "parameters"),
]


@pytest.mark.parametrize(("raw", "field"), BAD_DECLARATIONS)
def test_bad_declarations(raw, field):
    with pytest.raises(QueryTemplateInvalid) as info:
        parse_specs(raw)
    assert info.value.extra["field"] == field
