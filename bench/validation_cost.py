"""Validation time of nested-fragment documents: Strawberry's expanding limiters vs Cairn's.

``fragment F0 on Query { __typename }``, ``fragment Fi on Query { ...F(i-1) ...F(i-1) }``,
``query { ...F(n-1) }``: 2^(n-1) selections once expanded, in O(n) bytes. Prints the time of
graphql-core's standard rules plus (a) Strawberry's depth + alias limiters (what Cairn used
before; run only up to ``--old-max`` because each level doubles the time) and (b) Cairn's
memoised :class:`resolvers.limits.DocumentLimitsRule`.

    python -m bench.validation_cost [--old-max 20]
"""

from __future__ import annotations

import argparse
import time

from graphql import parse, specified_rules, validate
from strawberry.extensions.max_aliases import create_validator as alias_validator
from strawberry.extensions.query_depth_limiter import create_validator as depth_validator

from resolvers.limits import DocumentLimitsRule
from resolvers.schema import schema


def nested_fragments(n: int) -> str:
    """The attack document with ``n`` fragments."""
    frags = ["fragment F0 on Query { __typename }"]
    frags += [f"fragment F{i} on Query {{ ...F{i - 1} ...F{i - 1} }}" for i in range(1, n)]
    return " ".join(frags) + f" query {{ ...F{n - 1} }}"


def time_rules(n: int, rules: list) -> tuple[float, int]:
    """Milliseconds to validate the ``n``-fragment document, and the number of errors."""
    doc = parse(nested_fragments(n))
    started = time.perf_counter()
    errors = validate(schema._schema, doc, [*specified_rules, *rules])
    return (time.perf_counter() - started) * 1000, len(errors)


def main() -> None:
    """Print one line per (rules, n)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-max", type=int, default=20, help="largest n for the expanding limiters")
    args = parser.parse_args()
    old = [depth_validator(12, None), alias_validator(30)]
    print("rules                      n   bytes     ms  errors")
    for n in [n for n in (12, 14, 16, 18, 20, 22) if n <= args.old_max]:
        ms, errs = time_rules(n, old)
        print(f"strawberry depth+alias   {n:3d} {len(nested_fragments(n)):6d} {ms:8.1f} {errs:4d}")
    for n in (18, 24, 30, 60):
        ms, errs = time_rules(n, [DocumentLimitsRule])
        print(f"cairn DocumentLimitsRule {n:3d} {len(nested_fragments(n)):6d} {ms:8.1f} {errs:4d}")


if __name__ == "__main__":
    main()
