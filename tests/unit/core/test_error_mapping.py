"""The one mapping of errors to what a client sees (``to_response``), over every CairnError class."""

from __future__ import annotations

import importlib
import pkgutil
from http import HTTPStatus
from types import SimpleNamespace

import pytest

import cairn.app
from cairn.app.core.errors import CairnError, error_class, to_response
from cairn.app.governance import to_graphql_error

# what to_graphql_error reads of a request context (app.governance.RequestContextPort): the
# trace id, and the view's sub-response (None off GraphQL over HTTP, as on a WebSocket or MCP)
_CONTEXT = SimpleNamespace(trace_id="trace_t", response=None)


def _all_error_classes() -> list[type[CairnError]]:
    for module in pkgutil.walk_packages(cairn.app.__path__, "cairn.app."):
        importlib.import_module(module.name)
    found: list[type[CairnError]] = []
    pending: list[type[CairnError]] = [CairnError]
    while pending:
        cls = pending.pop()
        if cls not in found:
            found.append(cls)
            pending.extend(cls.__subclasses__())
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__qualname__}")


ERRORS = _all_error_classes()


def test_the_walk_finds_the_package_errors():
    names = {c.__qualname__ for c in ERRORS}
    assert {
        "BadInput",
        "UnsupportedMediaType",
        "DecisionUnsupportedMediaType",
        "DecisionTimeout",
        "RateLimited",
    } <= names


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_error_class_maps_to_its_code_and_a_valid_status(cls):
    assert isinstance(cls.code, str) and cls.code.strip() == cls.code and cls.code
    assert isinstance(cls.http_status, int) and 400 <= cls.http_status <= 599
    # 499 (client closed the request) is the one status outside the IANA registry
    assert cls.http_status == 499 or cls.http_status in {s.value for s in HTTPStatus}
    exc = cls("what went wrong", field="input.x")
    status, extensions = to_response(exc)
    assert status == cls.http_status
    assert extensions == {"code": cls.code, "field": "input.x"}
    err = to_graphql_error(_CONTEXT, exc)
    assert err.message == "what went wrong" and err.extensions == extensions


def test_anything_else_is_an_internal_error_without_details():
    assert to_response(ValueError("secret detail")) == (500, {"code": "INTERNAL_SERVER_ERROR"})
    err = to_graphql_error(_CONTEXT, ValueError("secret detail"))
    assert err.extensions == {"code": "INTERNAL_SERVER_ERROR"}
    assert "secret" not in err.message and "trace_t" in err.message


def test_none_extras_are_dropped():
    assert to_response(CairnError("m", limit=None, field="f")) == (500, {"code": "INTERNAL_SERVER_ERROR", "field": "f"})


def test_error_class_finds_the_declared_class_or_makes_one_per_pair():
    from cairn.app.decisions.errors import DecisionInputError

    assert error_class("invalid_decision_input", 400) is DecisionInputError
    made = error_class("SOMETHING_NEW", 418)
    assert made is error_class("SOMETHING_NEW", 418)
    assert to_response(made("m")) == (418, {"code": "SOMETHING_NEW"})


def test_the_status_is_not_an_instance_keyword():
    with pytest.raises(TypeError, match="class attribute"):
        CairnError("m", http_status=415)
