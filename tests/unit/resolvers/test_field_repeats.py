"""resolvers.field_repeats: one response name at most 50 times per selection set, fragments merged."""

from __future__ import annotations

import concurrent.futures

from graphql import get_introspection_query, parse

from cairn.resolvers.field_repeats import MAX_REPEATS, repeat_errors


def errors(query: str) -> list[str]:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a deadline, not a timing
        return pool.submit(repeat_errors, parse(query)).result(timeout=10)


def test_the_limit_is_inclusive():
    assert MAX_REPEATS == 50
    assert errors("{" + " viewer { kind }" * 50 + "}") == []
    [message] = errors("{" + " viewer { kind }" * 51 + "}")
    assert message == (
        "'viewer' is selected 51 times in one selection set once fragments are merged; "
        "the limit is 50: select each field once"
    )


def test_fragments_and_inline_fragments_are_merged_into_their_selection_set():
    frag = "fragment V on Query { viewer { kind } viewer { kind } } "
    assert errors(frag + "{" + " ...V" * 25 + "}") == []
    assert (
        "selected 52 times"
        in errors(frag + "{" + " ...V" * 25 + " ... on Query { viewer { kind } viewer { kind } } }")[0]
    )
    # the response name counts, not the field name
    assert errors("{" + " ".join(f"a: __typename b{i}: __typename" for i in range(26)) + "}") == []
    assert "'a' is selected 51 times" in errors("{" + " a: __typename" * 51 + "}")[0]


def test_nested_selection_sets_and_fragment_definitions_are_checked():
    assert "'kind' is selected 60 times" in errors("{ viewer {" + " kind" * 60 + " } }")[0]
    assert (
        "'kind' is selected 60 times" in errors("fragment W on Viewer {" + " kind" * 60 + " } { viewer { ...W } }")[0]
    )


def test_doubling_spreads_saturate_and_cycles_add_nothing():
    frags = ["fragment F0 on Query { __typename }"]
    frags += [f"fragment F{i} on Query {{ ...F{i - 1} ...F{i - 1} }}" for i in range(1, 60)]
    [message] = errors(" ".join(frags) + " { ...F59 }")
    assert "'__typename' is selected over 1,000,000 times" in message
    assert errors("fragment A on Query { ...B __typename } fragment B on Query { ...A __typename } { ...A }") == []


def test_real_client_documents_pass():
    assert errors(get_introspection_query(descriptions=True)) == []
    relay_like = " ".join(f"fragment P{i} on Viewer {{ __typename kind }}" for i in range(20))
    assert errors(relay_like + " { viewer { __typename" + "".join(f" ...P{i}" for i in range(20)) + " } }") == []
