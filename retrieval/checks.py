"""Argument checks shared by the lexical and vector indexes."""

from __future__ import annotations

from collections.abc import Sequence


def check_ids(name: str, values: Sequence[str] | None) -> None:
    """Raise ValueError unless ``values`` is None or a non-str sequence of non-empty str.

    Raises:
        ValueError: naming ``name`` and the offending value.
    """
    if values is None:
        return
    if isinstance(values, str):
        raise ValueError(f"{name} must be a sequence of ids, not a str")
    for value in values:
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must contain non-empty strings, got {value!r}")
