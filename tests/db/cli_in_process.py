"""The ``cairn`` command run in the test's own process (typer's ``CliRunner``), for the tests that
check what a command prints and returns, not how a process starts.

A ``python -m cairn.app.cli`` process costs ~3 s of CPU to import the command tree before it
does anything, and ~10 s more when the command loads the embedding model (importing torch and
sentence-transformers; measured on the 2-core test machine, 2026-12-03); in this process both
are imported once. What a real process adds stays tested by its own tests with real processes:
the entry point's exit code and ``--version`` (``tests/db/test_cli.py``), the width of a real
terminal, the data dir lock between processes, ``cairn serve`` and ``cairn mcp`` on stdio, and
an installed user's import path (``tests/db/cli_processes.py``).

:func:`run_cli` returns what :func:`subprocess.run` would: ``returncode`` (an uncaught
exception is 1 with Python's traceback on stderr, as the interpreter would print it), and
stdout and stderr apart, and a log record of WARNING or above on stderr as a process without logging set
up prints it. The environment, working directory and the ``cairn`` logger's handlers are
restored after the command (``cairn mcp`` installs its JSON log handler on stderr,
which here is the runner's buffer).
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_LOGGERS = ("cairn", "strawberry.execution", "uvicorn.error")
"""Loggers a command configures (app.core.logs.configure_logging, app.cli.common._serve_processes)."""


@contextlib.contextmanager
def _restored_process_state() -> Iterator[None]:
    """Run with the :data:`_LOGGERS` as a new process has them (no handler, level unset,
    propagating), then put back theirs and ``os.environ``."""
    environ = dict(os.environ)
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    saved = [(lg.handlers[:], lg.level, lg.propagate) for lg in loggers]
    for lg in loggers:  # as in a new process: whatever an earlier test in this one installed is off
        lg.handlers[:] = []
        lg.setLevel(logging.NOTSET)
        lg.propagate = True
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(environ)
        for lg, (handlers, level, propagate) in zip(loggers, saved):
            lg.handlers[:] = handlers
            lg.setLevel(level)
            lg.propagate = propagate


class _LastResort(logging.Handler):
    """What a process without logging set up prints: records of WARNING and above, as their
    message alone, on (the current) stderr (:data:`logging.lastResort`). Here the root logger has
    pytest's handlers, so the last resort would never be used: without this handler a warning
    that a process adds to its stderr would not be seen by a test counting stderr's lines."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        sys.stderr.write(self.format(record) + "\n")


def run_cli(
    *args: str, env: Mapping[str, str | None] | None = None, cwd: Path = ROOT, input: str | None = None
) -> subprocess.CompletedProcess:
    """Run ``cairn ARGS`` here, as ``python -m cairn.app.cli ARGS`` would in ``cwd``.

    Args:
        args: The command line after ``cairn``.
        env: Variables to set (None unsets one) for the command's duration, on top of this
            process's environment.
        cwd: Working directory of the command (relative paths resolve against it).
        input: What the command reads on stdin.

    Returns:
        A :class:`subprocess.CompletedProcess` with ``args``, ``returncode``, ``stdout`` and
        ``stderr`` (text).
    """
    from typer.testing import CliRunner

    from cairn.app.cli import cli

    runner = CliRunner()
    last_resort = _LastResort()
    root = logging.getLogger()
    root.addHandler(last_resort)
    try:
        with _restored_process_state(), contextlib.chdir(cwd):
            result = runner.invoke(cli, list(args), env=dict(env or {}), input=input, prog_name="cairn")
    finally:
        root.removeHandler(last_resort)
    stderr, code = result.stderr, result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))  # as the interpreter prints it
        code = 1
    return subprocess.CompletedProcess(["cairn", *args], code, result.stdout, stderr)


def without_cairn_settings(**extra: str) -> dict[str, str | None]:
    """An ``env`` for :func:`run_cli` that unsets every ``CAIRN_*`` variable of this process and
    sets ``extra`` (the environment :func:`tests.db.cli_processes.cli_env` gives a process)."""
    cleared: dict[str, str | None] = {k: None for k in os.environ if k.startswith("CAIRN_")}
    return {**cleared, **extra}
