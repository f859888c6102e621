"""The pack golden check in CI: this code's packs equal the recorded ``tests/golden/packs.json``.

A difference fails with the unified diff. Re-record (``python -m tests.golden.packs --write``)
only when a change of pack output is intended, and say so in the commit.
"""

from __future__ import annotations

from tests.golden.packs import GOLDEN, difference, dump, run


def test_packs_equal_the_golden_file():
    diff = difference(GOLDEN.read_text(encoding="utf-8"), dump(run()), str(GOLDEN))
    assert not diff, f"packs differ from the golden file:\n{diff}"
