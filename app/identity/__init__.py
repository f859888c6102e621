"""Workspaces, members, agent credentials and token authentication."""
