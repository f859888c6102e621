"""Input values graphql-core refuses before a resolver runs (a literal in the document, a
variable's value) leave as coded 400s that name the field the way Cairn's own checks do
(``extensions.field``, resolvers/input_paths.py), on SQLite (graphql-core refuses them before any read) through the HTTP
server. A DateTime that is not ISO 8601 says so — as a literal it used to be an error without
a position or a field."""

from __future__ import annotations

import pytest

PACK = "{ contextPack(input: %s) { tokensUsed } }"
PACK_VAR = "query($i: ContextPackInput!) { contextPack(input: $i) { tokensUsed } }"
VALIDATION, BAD_INPUT = "GRAPHQL_VALIDATION_FAILED", "BAD_USER_INPUT"

CASES = [
    # (name, query, variables, code, field, words in the message)
    (
        "DateTime literal",
        PACK % '{task: "x", asOf: {validTime: "13/45/2020"}}',
        None,
        VALIDATION,
        "input.asOf.validTime",
        ["DateTime", "ISO 8601", "13/45/2020"],
    ),
    (
        "DateTime variable",
        PACK_VAR,
        {"i": {"task": "x", "asOf": {"systemTime": "yesterday"}}},
        BAD_INPUT,
        "input.asOf.systemTime",
        ["ISO 8601", "yesterday"],
    ),
    (
        "DateTime not a string",
        PACK_VAR,
        {"i": {"task": "x", "asOf": {"validTime": 1735689600}}},
        BAD_INPUT,
        "input.asOf.validTime",
        ["ISO 8601", "not int"],
    ),
    ("Int literal", PACK % '{task: "x", budget: {maxTokens: "many"}}', None, VALIDATION, "input.budget.maxTokens", []),
    (
        "Int variable",
        PACK_VAR,
        {"i": {"task": "x", "budget": {"maxTokens": 12.5}}},
        BAD_INPUT,
        "input.budget.maxTokens",
        ["Int"],
    ),
    ("unknown field", PACK % '{task: "x", bogus: 1}', None, VALIDATION, "input.bogus", ["bogus"]),
    ("missing required field", PACK % "{budget: {maxTokens: 500}}", None, VALIDATION, "input.task", ["task"]),
    ("missing argument", "{ contextPack { tokensUsed } }", None, VALIDATION, "input", ["input"]),
    ("missing variable", PACK_VAR, {}, BAD_INPUT, "input", ["$i"]),
    (
        "list item",
        PACK_VAR,
        {"i": {"task": "x", "filters": {"sources": ["PASSAGES", "PAGES"]}}},
        BAD_INPUT,
        "input.filters.sources[1]",
        ["PAGES"],
    ),
    (
        "variable inside a literal",
        'query($m: Int!) { contextPack(input: {task: "x", budget: {maxTokens: $m}}) { tokensUsed } }',
        {"m": "lots"},
        BAD_INPUT,
        "input.budget.maxTokens",
        ["lots"],
    ),
    ("enum literal", PACK % '{task: "x", retrieval: SIDEWAYS}', None, VALIDATION, "input.retrieval", ["SIDEWAYS"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_refused_input_value_is_a_coded_400_naming_the_field(live, case):
    _name, query, variables, code, field, words = case
    r = live.gql(query, variables, live.tokens["owner"])
    assert r.status_code == 400, r.text
    (err,) = r.json()["errors"]
    assert err["extensions"]["code"] == code, err
    assert err["extensions"]["field"] == field, err
    for word in words:
        assert word in err["message"], err


def test_iso_8601_date_times_are_still_accepted(live):
    for value in ("2026-01-01T00:00:00Z", "2026-01-01T09:00:00+09:00", "2026-01-01T00:00:00.123456Z"):
        body = live.gql(PACK_VAR, {"i": {"task": "volcano", "asOf": {"validTime": value}}}, live.tokens["owner"]).json()
        assert "errors" not in body, body
        body = live.gql(
            PACK % f'{{task: "volcano", asOf: {{validTime: "{value}"}}}}', None, live.tokens["owner"]
        ).json()
        assert "errors" not in body, body
