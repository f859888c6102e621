"""``bench.report``: BENCHMARKS.md's generated blocks are rewritten from saved results, and
nothing else in the file is touched (the notes of individual studies hold most figures)."""

from __future__ import annotations

import json

import pytest

from bench import report
from tests.conftest import ROOT


def _scifact_result() -> dict:
    mode = {"ndcg@10": 0.5, "recall@10": 0.6, "recall@100": 0.9, "latency_ms": {"p50": 10.0, "p95": 20.0}}
    return {
        "max_tokens": 32000,
        "command": "python -m bench.beir --dataset scifact --max-tokens 32000",
        "modes": {
            "Cairn HYBRID": {**mode, "ndcg@10": 0.7321},
            "LangChain EnsembleRetriever (tuned tokens)": mode,
        },
    }


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)  # where the benchmarks would have saved
    return tmp_path


def test_without_results_every_block_is_kept_and_the_file_is_unchanged(results):
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    new, written, kept = report.update(text)
    assert new == text and written == []
    assert sorted(kept) == sorted(report.BLOCKS)


def test_a_saved_result_rewrites_its_block_only(results):
    (results / "beir-scifact.json").write_text(json.dumps(_scifact_result()))
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    new, written, _kept = report.update(text)
    assert written == ["quality-scifact"]
    start = "<!-- bench.report:quality-scifact -->\n"
    end = "<!-- /bench.report:quality-scifact -->"
    block = new[new.index(start) + len(start) : new.index(end)]
    assert block.startswith("Command: `python -m bench.beir --dataset scifact --max-tokens 32000` (run 20")
    assert "| Cairn HYBRID | **0.7321** | 0.9000 | 10.0 | 20.0 |" in block
    assert (
        "- Cairn HYBRID vs LangChain EnsembleRetriever (tuned tokens): nDCG@10 +0.2321 (×1.464), R@100 ×1.000." in block
    )

    # outside the block, the file is the same but for the refresh's machine line
    def outside(t: str) -> list[str]:
        lines = (t[: t.index(start)] + t[t.index(end) :]).splitlines()
        return [x for x in lines if not x.startswith("Machine of the last refresh:")]

    assert outside(new) == outside(text)
    # and a second refresh from the same results changes nothing
    assert report.update(new)[0] == new


def test_markers_edited_away_or_unknown_are_refused(results):
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match=r"missing markers for \['determinism'\]"):
        report.update(text.replace("<!-- /bench.report:determinism -->", ""))
    with pytest.raises(ValueError, match=r"unknown \['nope'\]"):
        report.update(text + "\n<!-- bench.report:nope -->\nx\n<!-- /bench.report:nope -->\n")
