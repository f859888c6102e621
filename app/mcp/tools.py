"""The MCP tool table: one :class:`ToolSpec` per tool, each governed as ``mcp.<name>`` in
:mod:`app.governance.registry` (same capability, permissions and scope as the GraphQL operation
it maps to).

Adding a tool is one :class:`ToolSpec` entry in the ``TOOLS`` list of its module (plus its registry line): a JSON Schema for the
arguments (descriptions, units, limits), ``prepare`` (the same validation as the GraphQL
operation, raising the same coded errors with the same ``field``/``limit``) and ``run``
(calls one service, returns JSON). ``field_prefix`` is the GraphQL input path the
operation's errors name (``input.`` for operations taking an ``input`` object).

The schemas, validation and handlers live by noun in ``knowledge``, ``discovery``, ``library``, ``facts``,
``memories`` and ``structured``; :class:`~app.mcp.spec.ToolSpec` says how a tool's arguments are checked.
"""

from __future__ import annotations

from cairn.app.mcp import discovery, facts, knowledge, library, memories, structured
from cairn.app.mcp.spec import ToolSpec

TOOLS: dict[str, ToolSpec] = {
    t.name: t
    for t in [*knowledge.TOOLS, *discovery.TOOLS, *library.TOOLS, *facts.TOOLS, *memories.TOOLS, *structured.TOOLS]
}
"""Tool name → spec, in listing order."""
