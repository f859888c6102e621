"""Validation time of nested-fragment documents: Strawberry's expanding limiters vs Cairn's.

``fragment F0 on Query { __typename }``, ``fragment Fi on Query { ...F(i-1) ...F(i-1) }``,
``query { ...F(n-1) }``: 2^(n-1) selections once expanded, in O(n) bytes. Prints:

- *before*: graphql-core's standard rules plus Strawberry's depth + alias limiters (what
  Cairn used), measured up to ``--old-max`` (each level doubles the time) and extrapolated
  beyond it from the last measured ratio per level — marked ``(extrapolated)``;
- *after*: the server's real path, ``schema.execute`` (parse with the token limit, the
  memoised limits of :mod:`resolvers.limits` first, graphql-core's rules only for documents
  within the limits), with fresh caches for every document.

    python -m bench.validation_cost [--old-max 20]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from graphql import parse, specified_rules, validate
from strawberry.extensions.max_aliases import create_validator as alias_validator
from strawberry.extensions.query_depth_limiter import create_validator as depth_validator

from cairn.resolvers.schema import document_limit_errors, schema


def nested_fragments(n: int) -> str:
    """The attack document with ``n`` fragments."""
    frags = ["fragment F0 on Query { __typename }"]
    frags += [f"fragment F{i} on Query {{ ...F{i - 1} ...F{i - 1} }}" for i in range(1, n)]
    return " ".join(frags) + f" query {{ ...F{n - 1} }}"


def time_before(n: int) -> float:
    """Milliseconds to validate the ``n``-fragment document with Strawberry's limiters."""
    doc = parse(nested_fragments(n))
    started = time.perf_counter()
    validate(schema._schema, doc, [*specified_rules, depth_validator(12, None), alias_validator(30)])
    return (time.perf_counter() - started) * 1000


def time_after(n: int) -> tuple[float, str]:
    """Milliseconds for ``schema.execute`` of the ``n``-fragment document, and its first error."""
    document_limit_errors.cache_clear()
    query = nested_fragments(n) + f" # {time.perf_counter_ns()}"  # a text no cache has seen
    started = time.perf_counter()
    result = asyncio.run(schema.execute(query))
    ms = (time.perf_counter() - started) * 1000
    return ms, result.errors[0].message if result.errors else "(no error)"


def main() -> None:
    """Print one line per (path, n)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-max", type=int, default=20, help="largest n measured for the expanding limiters")
    args = parser.parse_args()
    print("path     n   bytes          ms")
    measured: dict[int, float] = {}
    for n in range(12, args.old_max + 1, 2):
        measured[n] = time_before(n)
        print(f"before {n:3d} {len(nested_fragments(n)):6d} {measured[n]:11.1f}")
    last = max(measured)
    ratio = (measured[last] / measured[last - 2]) ** 0.5 if last - 2 in measured else 2.0
    for n in (24, 30):
        if n > last:
            print(
                f"before {n:3d} {len(nested_fragments(n)):6d} {measured[last] * ratio ** (n - last):11.0f}"
                f"  (extrapolated, x{ratio:.2f} per level)"
            )
    for n in (18, 24, 30, 60):
        ms, message = time_after(n)
        print(f"after  {n:3d} {len(nested_fragments(n)):6d} {ms:11.1f}  {message[:70]}")


if __name__ == "__main__":
    main()
