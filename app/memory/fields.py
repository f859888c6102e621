"""Input rules of memory fields: lengths, storable text, no personal data in namespaces and keys."""

from __future__ import annotations

from collections.abc import Sequence

from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import validate_name, validate_text
from cairn.app.memory.errors import MemoryPersonalData
from cairn.app.memory.pii import mask_pii

MAX_TEXT, MAX_NAMESPACE, MAX_KEY, MAX_CITATIONS = 1_000, 64, 120, 20


def validate_fields(
    *,
    namespace: str | None = None,
    key: str | None = None,
    text: str | None = None,
    citations: Sequence[str] | None = None,
    prefix: str = "",
) -> None:
    """Length and personal-data rules of memory fields (``prefix`` = GraphQL input path).

    Raises:
        BadInput: a length outside its limit (``BAD_USER_INPUT``), or personal data in
            ``namespace``/``key`` (``AGENT_MEMORY_PERSONAL_DATA``, 400).
    """
    if namespace is not None and not 1 <= len(namespace) <= MAX_NAMESPACE:
        raise BadInput(f"{prefix}namespace must be 1–64 characters", field=f"{prefix}namespace", limit="1-64")
    if key is not None and not 1 <= len(key) <= MAX_KEY:
        raise BadInput(f"{prefix}key must be 1–120 characters", field=f"{prefix}key", limit="1-120")
    if text is not None and not 1 <= len(text) <= MAX_TEXT:
        raise BadInput(f"{prefix}text must be 1–1,000 characters", field=f"{prefix}text", limit="1-1000")
    for name, value in (("namespace", namespace), ("key", key)):
        if value is not None:
            validate_name(value, f"{prefix}{name}", MAX_KEY)
    if text is not None:
        validate_text(text, f"{prefix}text", MAX_TEXT)
    if citations is not None and len(citations) > MAX_CITATIONS:
        raise BadInput(f"{prefix}citations holds at most 20 passage ids", field=f"{prefix}citations", limit=20)
    for name, value in (("namespace", namespace), ("key", key)):
        if value is not None and mask_pii(value).changed:
            kinds = ", ".join(sorted(mask_pii(value).counts))
            raise MemoryPersonalData(
                f"{prefix}{name} contains personal data ({kinds}); namespaces and keys are not "
                "masked, so choose one without it",
                field=f"{prefix}{name}",
            )
