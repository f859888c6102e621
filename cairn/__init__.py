"""Cairn: governed context for AI agents.

Every Cairn package lives under this one namespace when installed (``cairn.app``,
``cairn.resolvers``, ``cairn.retrieval``, ``cairn.migrations``), so a user's own ``app`` or
``retrieval`` package never clashes with ours. In a clone, the folders keep the layout the
project documents (``app/``, ``resolvers/``, ``retrieval/``, ``migrations/`` at the top level)
and ``cairn/`` holds relative symbolic links to them; the wheel holds real copies.
"""
