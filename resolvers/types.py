"""Types shared by the resolvers.

``Info`` is Strawberry's resolver info typed with Cairn's per-request context, so
``info.context`` is a :class:`~app.context.RequestContext` (services, principal, envelope,
trace id) for type checkers and editors; there is no root value (``None``).
"""

from __future__ import annotations

from typing import TypeAlias

import strawberry

from cairn.app.context import RequestContext

Info: TypeAlias = strawberry.Info[RequestContext, None]

__all__ = ["Info"]
