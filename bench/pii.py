"""PII masking benchmark: ``python -m bench.pii``.

Runs :func:`app.services.memory_pii.mask_pii` over the test set in
``tests/unit/pii_cases.py`` and prints: masked recall (the secret is gone), kind agreement
(the placeholder names the expected kind), false positives on look-alikes (dates, prices,
versions, short ids, times …), and the time per string. Import cost of the detectors'
libraries is printed too (phonenumbers + python-stdnum).
"""

from __future__ import annotations

import statistics
import sys
import time


def main() -> None:
    t0 = time.perf_counter()
    import phonenumbers  # noqa: F401
    import stdnum.iban  # noqa: F401
    import stdnum.il.idnr  # noqa: F401

    import_ms = (time.perf_counter() - t0) * 1000
    from app.services.memory_pii import mask_pii
    from tests.unit.pii_cases import NEGATIVE, POSITIVE

    mask_pii("warm up +972-52-123-4567")
    masked = kind_ok = 0
    misses: list[str] = []
    times: list[float] = []
    by_kind: dict[str, list[int]] = {}
    for text, kind, secret in POSITIVE:
        t = time.perf_counter()
        out = mask_pii(text)
        times.append((time.perf_counter() - t) * 1000)
        hit = secret not in out.text
        masked += hit
        kind_ok += f"[{kind}_" in out.text
        by_kind.setdefault(kind, [0, 0])[0] += hit
        by_kind[kind][1] += 1
        if not hit:
            misses.append(f"  MISS {kind}: {text!r} -> {out.text!r}")
    false_pos = []
    for text in NEGATIVE:
        t = time.perf_counter()
        out = mask_pii(text)
        times.append((time.perf_counter() - t) * 1000)
        if out.text != text:
            false_pos.append(f"  FALSE POSITIVE: {text!r} -> {out.text!r}")
    print(f"PII set: {len(POSITIVE)} strings with personal data, {len(NEGATIVE)} look-alikes")
    print(f"masked recall: {masked}/{len(POSITIVE)} ({masked / len(POSITIVE):.3f}); "
          f"kind agreement {kind_ok}/{len(POSITIVE)}")
    for kind, (hit, n) in sorted(by_kind.items()):
        print(f"  {kind:<13} {hit}/{n}")
    print(f"false positives: {len(false_pos)}/{len(NEGATIVE)}")
    print(f"time per string: median {statistics.median(times):.2f} ms, max {max(times):.2f} ms; "
          f"library import {import_ms:.0f} ms")
    for line in misses + false_pos:
        print(line)
    sys.exit(0)


if __name__ == "__main__":
    main()
