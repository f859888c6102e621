"""The passage document of the lexical index: :class:`IndexedPassage`, the Whoosh schema it
is stored under, and the field values written for it (:mod:`retrieval.lexical.whoosh_index`)."""

from __future__ import annotations

from dataclasses import dataclass

from whoosh.fields import ID, TEXT, Schema

from cairn.retrieval.analysis import cairn_analyzer


@dataclass(frozen=True)
class IndexedPassage:
    """A passage as the lexical index sees it.

    Attributes:
        passage_id: Unique, stable id (the upsert key).
        workspace_id: Tenant partition; every search filters on it.
        collection_id: Collection of the document.
        document_id: Document the passage belongs to.
        title: Document title (``title`` field; also prepended to the body by default).
        text: Passage text (indexed in the ``body`` field).
    """

    passage_id: str
    workspace_id: str
    collection_id: str
    document_id: str
    title: str
    text: str


def passage_schema() -> Schema:
    """Return the Whoosh schema of the passage index.

    Returns:
        ``passage_id`` ID (stored, unique), ``workspace_id``/``collection_id``/
        ``document_id`` ID, ``title`` and ``body`` TEXT with :func:`cairn_analyzer`
        (positions kept, for phrase queries). With ``title_in_body`` the body holds
        ``title + "\\n\\n" + text``.
    """
    analyzer = cairn_analyzer()
    return Schema(
        passage_id=ID(stored=True, unique=True),
        workspace_id=ID,
        collection_id=ID,
        document_id=ID,
        title=TEXT(analyzer=analyzer, phrase=True),
        body=TEXT(analyzer=analyzer, phrase=True),
    )


def passage_fields(passage: IndexedPassage, *, title_in_body: bool) -> dict[str, str]:
    """The field values of :func:`passage_schema` for one passage.

    Args:
        passage: The passage.
        title_in_body: Prepend a non-empty title to the body (``title + "\\n\\n" + text``).

    Returns:
        ``passage_id``, ``workspace_id``, ``collection_id``, ``document_id``, ``title``
        and ``body``, as keyword arguments for a Whoosh writer's ``add_document`` or
        ``update_document``.
    """
    return {
        "passage_id": passage.passage_id,
        "workspace_id": passage.workspace_id,
        "collection_id": passage.collection_id,
        "document_id": passage.document_id,
        "title": passage.title,
        "body": f"{passage.title}\n\n{passage.text}" if title_in_body and passage.title else passage.text,
    }
