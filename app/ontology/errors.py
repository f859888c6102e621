"""The ontology's errors beyond :class:`~app.ontology.types.InvalidCondition`: one class per code."""

from __future__ import annotations

from cairn.app.core.errors import BadInput


class InvalidCursor(BadInput):
    """A cursor not issued by this server, altered, or for another query (400 ``INVALID_CURSOR``)."""

    code = "INVALID_CURSOR"


class SourcePathNotAllowed(BadInput):
    """A mapping's source outside ``CAIRN_ONTOLOGY_SOURCE_DIRS`` (400 ``SOURCE_PATH_NOT_ALLOWED``)."""

    code = "SOURCE_PATH_NOT_ALLOWED"
