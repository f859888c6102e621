"""resolvers.limits: expanded document measures in linear time, fragments memoised."""

from __future__ import annotations

import concurrent.futures

import pytest
from graphql import get_introspection_query, parse, specified_rules, validate

from cairn.resolvers.limits import MAX_SELECTIONS, DocumentCost, limit_errors
from cairn.resolvers.schema import document_limit_errors, schema


def nested_fragments(n: int) -> str:
    frags = ["fragment F0 on Query { __typename }"]
    frags += [f"fragment F{i} on Query {{ ...F{i - 1} ...F{i - 1} }}" for i in range(1, n)]
    return " ".join(frags) + f" query {{ ...F{n - 1} }}"


def _validate(query: str) -> list[str]:
    doc = parse(query)
    return list(document_limit_errors(doc)) or [e.message for e in validate(schema._schema, doc, specified_rules)]


@pytest.mark.parametrize("n", [18, 24, 30, 60])
def test_nested_fragment_spreads_are_refused_without_expanding_them(n):
    # A generous deadline turns an exponential regression into a failure instead of a hang
    # (n = 30 took ~1 h with the expanding limiters: 3.6 s at n = 20, x2 per level).
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        errors = pool.submit(_validate, nested_fragments(n)).result(timeout=10)
    expected = f"{2 ** (n - 1):,}" if n <= 24 else "over 10,000,000"
    assert [m for m in errors if "fragments are expanded" in m] == [
        f"the operation selects {expected} fields once fragments are expanded; the limit is 10,000: "
        "select fewer fields or spread fragments fewer times"
    ]


def test_counts_equal_a_brute_force_expansion():
    q = (
        "fragment A on Query { viewer { kind } x: viewer { kind } } "
        "fragment B on Query { ...A ... on Query { ...A y: __typename } } "
        "query { ...B ...A z: viewer { ...C } } fragment C on Viewer { kind }"
    )
    doc = parse(q)
    op = next(d for d in doc.definitions if d.kind == "operation_definition")
    c = DocumentCost(doc).selection_set(op.selection_set)
    # A = 4 selections, 1 alias, depth 1; B = 2*A + 1 = 9, 3 aliases; query = B + A + (1 + C=1) = 15
    assert (c.selections, c.aliases, c.depth) == (15, 5, 1)


def test_depth_aliases_and_packs_keep_their_limits():
    deep = "{ " + "viewer { " * 13 + "kind" + " }" * 13 + " }"
    assert any("13 fields deep; the depth limit is 12" in m for m in limit_errors(parse(deep)))
    ok = "{ " + "viewer { " * 12 + "kind" + " }" * 12 + " }"
    assert not any("deep" in m for m in limit_errors(parse(ok)))
    aliases = "fragment V on Query { " + " ".join(f"a{i}: viewer {{ kind }}" for i in range(16)) + " } { ...V ...V }"
    assert any("uses 32 aliases; the limit is 30" in m for m in limit_errors(parse(aliases)))
    packs = 'fragment P on Query { contextPack(input: {task: "x"}) { packId } } { a: contextPack(input: {task: "y"}) { packId } ...P ...P }'
    assert any("at most 2 contextPack fields per request" in m for m in limit_errors(parse(packs)))


def test_introspection_and_cycles_are_handled():
    assert limit_errors(parse(get_introspection_query(descriptions=True))) == []
    cyclic = "fragment A on Query { ...B } fragment B on Query { ...A viewer { kind } } { ...A }"
    messages = _validate(cyclic)
    assert any("Cannot spread fragment 'A' within itself" in m for m in messages)


def test_the_selection_limit_is_inclusive():
    tens = (
        "fragment F0 on Query { " + "__typename " * 10 + "} "
        "fragment F1 on Query { " + "...F0 " * 10 + "} "
        "fragment F2 on Query { " + "...F1 " * 10 + "} "
    )
    assert MAX_SELECTIONS == 10_000
    assert limit_errors(parse(tens + "{ " + "...F2 " * 10 + "}")) == []  # exactly 10,000
    [message] = limit_errors(parse(tens + "{ " + "...F2 " * 10 + "__typename }"))
    assert message.startswith("the operation selects 10,001 fields once fragments are expanded")
