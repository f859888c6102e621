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


class IndexUnreadable(RuntimeError):
    """A derived index on disk cannot be read: a truncated, deleted or garbage file of a
    Whoosh segment or table of contents, or an embedded vector store the engine cannot load.

    SQL holds everything the index was built from, so the repair is to rebuild it (the
    caller names its command: ``cairn reindex``); the index is not changed by the refusal.

    Attributes:
        what: The index, for people: ``"BM25 index"`` or ``"vector store"``.
        path: Its folder.
        detail: What failed, ``"<exception class>: <message>"`` on one line.
    """

    def __init__(self, what: str, path: object, detail: str) -> None:
        self.what = what
        self.path = path
        self.detail = " ".join(detail.split())
        super().__init__(f"the {what} at {path} cannot be read ({self.detail})")


def describe(exc: BaseException) -> str:
    """``"<class name>: <message>"`` of an exception, or the class name alone without a message."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
