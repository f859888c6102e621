"""The MCP server: Cairn's tools over the Model Context Protocol (stdio and streamable HTTP),
every call governed like a GraphQL operation.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from cairn.app.mcp.governed import CONFIRMATION_META, ENVELOPE_META, governed_call
from cairn.app.mcp.server import MCPHttp, build_server, run_stdio
from cairn.app.mcp.spec import ToolSpec
from cairn.app.mcp.tools import TOOLS

__all__ = [
    "CONFIRMATION_META",
    "ENVELOPE_META",
    "TOOLS",
    "MCPHttp",
    "ToolSpec",
    "build_server",
    "governed_call",
    "run_stdio",
]
