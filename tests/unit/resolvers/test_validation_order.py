"""resolvers.schema.LimitedValidation: the linear limits run alone, before graphql-core's rules,
and the parse / limit / validation caches keep working."""

from __future__ import annotations

import concurrent.futures

from graphql import parse
from strawberry.extensions.validation_cache import _get_validate_cache

from cairn.resolvers.schema import document_limit_errors, schema


async def test_a_document_over_a_limit_is_not_visited_by_the_other_rules():
    # 31 aliases and an unknown field: only the limit is reported, so no other rule ran on it
    # (graphql-core's rules, some quadratic, took 0.4 s on such a 5 KB document).
    over = "{ " + " ".join(f"a{i}: __typename" for i in range(31)) + " nosuchfield }"
    result = await schema.execute(over)
    assert [e.message for e in result.errors] == ["the operation uses 31 aliases; the limit is 30"]
    assert result.errors[0].extensions["code"] == "GRAPHQL_VALIDATION_FAILED"
    within = "{ " + " ".join(f"a{i}: __typename" for i in range(30)) + " nosuchfield }"
    result = await schema.execute(within)
    assert [e.message for e in result.errors] == ["Cannot query field 'nosuchfield' on type 'Query'."]


async def test_limits_and_validation_are_cached_per_document_text():
    query = "query CachedTwice { __typename }"
    validated = _get_validate_cache(128)
    limits_before, validated_before = document_limit_errors.cache_info(), validated.cache_info()
    for _ in range(2):
        assert (await schema.execute(query)).data == {"__typename": "Query"}
    assert document_limit_errors.cache_info().hits == limits_before.hits + 1
    assert validated.cache_info().hits == validated_before.hits + 1


def test_a_fragment_chain_too_deep_to_measure_is_refused_not_a_crash():
    # 3,000 chained fragments (beyond the 2,000-token parse limit, so only reachable if that
    # limit were raised): the measuring recursion runs out of stack and the document is refused.
    chain = " ".join(f"fragment F{i} on Query {{ ...F{i - 1} }}" for i in range(1, 3000))
    doc = parse("fragment F0 on Query { __typename } " + chain + " query { ...F2999 }")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        errors = pool.submit(document_limit_errors, doc).result(timeout=10)
    assert len(errors) == 1 and "too deeply to measure" in errors[0] and "depth 12" in errors[0]
