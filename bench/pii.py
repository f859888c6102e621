"""PII masking benchmark: ``python -m bench.pii``.

Runs :func:`app.memory.pii.find_pii` / :func:`~app.memory.pii.mask_pii` over
the test set in ``tests/unit/memory/pii_cases.py`` and prints, overall and per kind:

- *masked*: every character of the personal value lies inside a masked span (a value masked
  only in part, like ``…002X`` → ``[CARD_1]X``, counts as a miss);
- *kind right*: one span of the expected kind covers the whole value;

then false positives on the look-alikes (dates, prices, versions, short ids, times …), the
``EXACT`` cases (span boundaries and numbering), the time per string and on adversarial
1,000-character texts. Import cost of the detectors' libraries is printed too (phonenumbers +
python-stdnum).
"""

from __future__ import annotations

import statistics
import sys
import time


def _covered(spans: list[tuple[int, int, str]], start: int, end: int) -> bool:
    return all(any(s <= i < e for s, e, _ in spans) for i in range(start, end))


def main() -> None:
    t0 = time.perf_counter()
    import phonenumbers  # noqa: F401
    import stdnum.iban
    import stdnum.il.idnr  # noqa: F401

    import_ms = (time.perf_counter() - t0) * 1000
    from cairn.app.memory.pii import find_pii, mask_pii
    from tests.unit.memory.pii_cases import EXACT, NEGATIVE, POSITIVE

    # warm up every detector (their stdnum modules are imported on first use)
    mask_pii(
        "warm up +972-52-123-4567 2001:db8::1 IBAN DE89370400440532013000 身份证 11010519491231002X "
        "ISBN 978-0-306-40615-7 SIN 130 692 544 TFN 876 543 210 NHS 943 476 5919 SSN 536-90-4399 "
        "aadhaar 2341 2341 2346 account 12345678 4111 1111 1111 1111"
    )
    masked = kind_ok = 0
    misses: list[str] = []
    times: list[float] = []
    by_kind: dict[str, list[int]] = {}
    for text, kind, secret in POSITIVE:
        t = time.perf_counter()
        spans = find_pii(text)
        times.append((time.perf_counter() - t) * 1000)
        start = text.index(secret)
        end = start + len(secret)
        hit = _covered(spans, start, end)
        right = [k for s, e, k in spans if s <= start and end <= e] == [kind]
        masked += hit
        kind_ok += right
        row = by_kind.setdefault(kind, [0, 0, 0])
        row[0] += hit
        row[1] += right
        row[2] += 1
        if not (hit and right):
            misses.append(f"  {'WRONG KIND' if hit else 'MISS'} {kind}: {text!r} -> {mask_pii(text).text!r}")
    false_pos = []
    for text in NEGATIVE:
        t = time.perf_counter()
        out = mask_pii(text)
        times.append((time.perf_counter() - t) * 1000)
        if out.text != text:
            false_pos.append(f"  FALSE POSITIVE: {text!r} -> {out.text!r}")
    exact_bad = [
        f"  EXACT: {text!r} -> {mask_pii(text).text!r} (want {want!r})"
        for text, want in EXACT
        if mask_pii(text).text != want
    ]
    # worst cases: 1,000-character texts (the memory text cap) built to make the patterns work
    adversarial = {
        "digits": "1" * 1000,
        "1 1 1": "1 " * 500,
        "1234 groups": "1234 " * 200,
        "1.1.1": "1." * 500,
        "1:1:1": "1:" * 500,
        "ab12 ab12": "ab12 " * 200,
        "IBAN groups": "de44" + " 5001" * 199,
        "IPv4 list": "10.0.0.1 " * 112,
        "ids": "ID 039337423 " * 77,
        "CJK + digits": "号1" * 500,
    }
    worst = []
    for name, text in adversarial.items():
        t = time.perf_counter()
        mask_pii(text[:1000])
        worst.append(((time.perf_counter() - t) * 1000, name))
    n = len(POSITIVE)
    print(f"PII set: {n} strings with personal data, {len(NEGATIVE)} look-alikes, {len(EXACT)} exact cases")
    print(f"masked: {masked}/{n} ({masked / n:.3f}); kind right: {kind_ok}/{n} ({kind_ok / n:.3f})")
    print(f"  {'kind':<13} masked  kind right")
    for kind, (hit, right, total) in sorted(by_kind.items()):
        print(f"  {kind:<13} {hit:>3}/{total:<3} {right:>3}/{total}")
    print(f"false positives: {len(false_pos)}/{len(NEGATIVE)}")
    print(f"exact cases wrong: {len(exact_bad)}/{len(EXACT)}")
    print(
        f"time per string: median {statistics.median(times):.2f} ms, max {max(times):.2f} ms; "
        f"library import {import_ms:.0f} ms"
    )
    ms, name = max(worst)
    print(
        f"adversarial 1,000-character texts: max {ms:.1f} ms ({name}), median "
        f"{statistics.median(w for w, _ in worst):.1f} ms over {len(worst)}"
    )
    for line in misses + false_pos + exact_bad:
        print(line)
    sys.exit(0)


if __name__ == "__main__":
    main()
