"""The ranker learns from labelled documents, round-trips through JSON, and keeps one variant
of an entity in a MANY field."""

from __future__ import annotations

import json

from cairn.app.fields import FieldSpec, FieldType, Multiplicity, Ranker, train

SPEC = FieldSpec("closing_date", FieldType.DATE, "the date the deal closes")
PARTY = FieldSpec("party", FieldType.TEXT, "a party", Multiplicity.MANY)


def _doc(signed: str, closing: str) -> str:
    return f"Signed on {signed}. The closing shall occur on {closing} at noon. Notices sent before {signed}."


def test_labels_teach_which_date_is_the_closing_date():
    texts = [_doc(f"January {d}, 2020", f"March {d}, 2021") for d in range(1, 9)]
    gold = [{"closing_date": {f"2021-03-{d:02d}"}} for d in range(1, 9)]
    ranker = train([SPEC], texts, gold)
    got = ranker.extract(_doc("May 5, 2019", "July 7, 2022"), [SPEC])["closing_date"]
    assert [(e.key, e.value) for e in got] == [("2022-07-07", "2022-07-07")]
    again = Ranker.from_json(json.loads(json.dumps(ranker.to_json())))
    assert [e.key for e in again.extract(_doc("May 5, 2019", "July 7, 2022"), [SPEC])["closing_date"]] == ["2022-07-07"]
    # an untrained field is scored zero-shot from its description (words near the candidate)
    zero = Ranker().extract(_doc("May 5, 2019", "July 7, 2022"), [SPEC])["closing_date"]
    assert [e.key for e in zero] == ["2022-07-07"]


def test_a_many_field_keeps_one_variant_of_an_entity():
    texts = [
        f"This Agreement is between Alpha{n} Widgets, Inc. (the “Company”) and Beta{n} Tools LLC (“Beta”). "
        f"LOGO Alpha{n} Widgets, Inc. Signed by the parties."
        for n in range(8)
    ]
    gold = [{"party": {f"ALPHA{n} WIDGETS INC.", f"BETA{n} TOOLS LLC"}} for n in range(8)]
    ranker = train([PARTY], texts, gold)
    ranker.models["party"].threshold = 0.0  # take every candidate: variants must still collapse
    got = {e.key for e in ranker.extract(texts[0].replace("0", "9"), [PARTY])["party"]}
    assert not any(a != b and f" {a} " in f" {b} " for a in got for b in got)
