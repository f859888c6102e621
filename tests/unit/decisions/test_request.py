"""The decision input parser and validator (SPEC §8), without a server."""

from __future__ import annotations

import json

import pytest

from cairn.app.decisions.body import DecisionBodyTooLarge, DecisionInputError, check_json_value, parse_body
from cairn.app.decisions.judges import JudgeError, OptionScore, option_probabilities
from cairn.app.decisions.judging import build_prompt, render_state, session_context, state_context
from cairn.app.decisions.request import BOOL_TEXT, validate_request
from cairn.app.decisions.service import validate_idempotency_key

Q = {"type": "CHOICE", "instructions": "Resolved?", "choices": [{"value": True}, {"value": False}]}


def ok(**over):
    body = {"state": {"message": "My issue is resolved."}, "questions": [dict(Q)]}
    body.update(over)
    return body


def test_a_valid_request_keeps_order_types_and_mode():
    req = validate_request(
        parse_body(
            json.dumps(
                {
                    "sessionId": "sess_1",
                    "questions": [
                        {
                            "type": "SCORE",
                            "name": "completion",
                            "instructions": "How complete?",
                            "levels": [
                                {"label": "No", "score": 0},
                                {"label": "Half", "score": 0.5, "description": "part"},
                            ],
                        },
                        Q,
                    ],
                }
            ).encode()
        )
    )
    assert req.mode == "SESSION" and req.session_id == "sess_1" and req.state is None
    assert [q.type for q in req.questions] == ["SCORE", "CHOICE"]
    assert [(o.text, o.score) for o in req.questions[0].options] == [("No", 0), ("Half", 0.5)]
    assert [o.value for o in req.questions[1].options] == [True, False]
    assert [o.text for o in req.questions[1].options] == BOOL_TEXT  # what the judge scores for True / False


def test_depth_sixteen_and_a_thousand_members_pass_but_one_more_fails():
    nested: dict = {"v": 1}
    for _ in range(14):  # the body object + 15 nested objects (state is the outermost) = 16 levels
        nested = {"n": nested}
    parse_body(json.dumps(ok(state=nested)).encode())
    with pytest.raises(DecisionInputError) as e:
        parse_body(json.dumps(ok(state={"n": nested})).encode())
    assert e.value.extra["limit"] == 16
    parse_body(json.dumps(ok(state={f"k{i}": i for i in range(1000)})).encode())
    with pytest.raises(DecisionInputError) as e:
        parse_body(json.dumps(ok(state={f"k{i}": i for i in range(1001)})).encode())
    assert e.value.extra["limit"] == 1000
    with pytest.raises(DecisionInputError):
        parse_body(json.dumps(ok(state={"a": list(range(1001))})).encode())


def test_the_body_limit_is_one_mebibyte():
    pad = 1024 * 1024 - len(json.dumps(ok(state={"p": ""})).encode())
    parse_body(json.dumps(ok(state={"p": "x" * pad})).encode())
    with pytest.raises(DecisionBodyTooLarge) as e:
        parse_body(json.dumps(ok(state={"p": "x" * (pad + 1)})).encode())
    assert e.value.http_status == 413


@pytest.mark.parametrize(
    "raw,needle",
    [
        (b'{"state":{"a":1,"a":2},"questions":[]}', "duplicate JSON key 'a'"),
        (b'{"state":{"a":NaN},"questions":[]}', "NaN"),
        (b'{"state":{"a":-Infinity},"questions":[]}', "-Infinity"),
        (b'{"state":{"a":1e400},"questions":[]}', "finite double"),
        (b'{"state":{"a":1' + b"0" * 400 + b'},"questions":[]}', "finite double"),
        (b'{"state":{"a":"x\\u0000y"},"questions":[]}', "U+0000"),
        (b'{"state":{"a\\u001f":"x"},"questions":[]}', "U+001F"),
        (b'{"state":{"a":"\\ud800"},"questions":[]}', "surrogate"),
        (b'\xff{"state":{}}', "UTF-8"),
        (b"[1]", "one JSON object"),
        (b'{"state":', "not valid JSON"),
        (b"[" * 50_000 + b"]" * 50_000, "nesting"),
    ],
)
def test_body_level_refusals_name_the_problem(raw, needle):
    with pytest.raises(DecisionInputError) as e:
        parse_body(raw)
    assert needle in e.value.message
    assert e.value.code == "invalid_decision_input" and e.value.http_status == 400


def test_newline_tab_and_carriage_return_are_allowed_in_strings():
    body = parse_body(json.dumps(ok(state={"m": "a\nb\tc\rd"})).encode())
    assert body["state"]["m"] == "a\nb\tc\rd"


def test_graphql_state_gets_the_same_limits():
    check_json_value({"a": [1, "x\n"]}, "input.state")
    with pytest.raises(DecisionInputError, match="U\\+0001"):
        check_json_value({"a": "\x01"}, "input.state")
    with pytest.raises(DecisionInputError, match="finite"):
        check_json_value({"a": float("nan")}, "input.state")


@pytest.mark.parametrize(
    "values,field_ok",
    [
        ([], None),
        (["  abc  "], "abc"),
        (["k" * 256], "k" * 256),
    ],
)
def test_idempotency_keys_within_the_rules(values, field_ok):
    assert validate_idempotency_key(values) == field_ok


@pytest.mark.parametrize(
    "values,needle",
    [
        (["a", "b"], "more than once"),
        (["   "], "1–256 bytes"),
        (["é" * 129], "1–256 bytes"),
        (["a\x01b"], "control"),
    ],
)
def test_idempotency_key_refusals(values, needle):
    with pytest.raises(DecisionInputError) as e:
        validate_idempotency_key(values)
    assert needle in e.value.message and e.value.extra["field"] == "Idempotency-Key"


def test_state_rendering_and_context_budgets():
    assert (
        render_state({"user": {"name": "Ann", "tags": ["a", 2]}, "ok": True})
        == "user:\n  name: Ann\n  tags:\n    - a\n    - 2\nok: true"
    )
    text, info = state_context({"m": "hello"}, 100)
    assert text == "m: hello" and info["tokens"] == 3
    with pytest.raises(JudgeError) as e:
        state_context({"m": "word " * 200}, 100)
    assert (e.value.code, e.value.http_status) == ("decision_context_too_large", 422)
    msgs = [("user", "one " * 30), ("assistant", "two"), ("user", "three")]
    text, info = session_context(msgs, 12)
    assert text == "assistant: two\nuser: three" and info["omittedMessages"] == 1 and info["messages"] == 2
    with pytest.raises(JudgeError) as e:
        session_context([], 100)
    assert (e.value.code, e.value.http_status) == ("decision_context_unavailable", 422)
    with pytest.raises(JudgeError) as e:
        session_context([("user", "x " * 500)], 100)
    assert e.value.code == "decision_context_too_large"


def test_prompt_lists_options_with_descriptions_and_ends_in_the_model_turn():
    q = validate_request(
        {
            "state": {"a": 1},
            "questions": [
                {
                    "type": "SCORE",
                    "instructions": "Rate it.",
                    "levels": [{"label": "Low", "score": 0, "description": "bad"}, {"label": "High", "score": 1}],
                }
            ],
        }
    ).questions[0]
    p = build_prompt(q, "a: 1")
    assert p == "Context:\na: 1\n\nQuestion: Rate it.\nLevels:\n- Low (bad)\n- High\nAnswer: "
    assert build_prompt(q, "a: 1", "chat").endswith("- High\n<end_of_turn>\n<start_of_turn>model\n")
    plain_q = validate_request({"state": {"a": 1}, "questions": [Q]}).questions[0]  # no descriptions: not listed
    assert build_prompt(plain_q, "a: 1") == "Context:\na: 1\n\nQuestion: Resolved?\nAnswer: "


def test_option_probabilities_mean_sum_and_calibration():
    scores = [OptionScore(-2.0, 1), OptionScore(-3.0, 3)]
    mean = option_probabilities(scores, normalise="mean")
    total = option_probabilities(scores, normalise="sum")
    assert mean[1] > mean[0] and total[0] > total[1]
    assert abs(sum(mean) - 1) < 1e-9
    calibrated = option_probabilities(scores, normalise="sum", baseline=[OptionScore(-1.0, 1), OptionScore(-3.5, 3)])
    assert calibrated[1] > calibrated[0]
