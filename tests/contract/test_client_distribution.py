"""The Python client is a distribution of its own (``clients/python``, ``cairn-context-client``):
one version with the server, no copy of it in the server, and a wheel that holds the client
alone and needs only httpx and websockets (the frameworks as extras).

Its calls are tested against a live server in tests/graphql/test_client.py.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import cairn_context_client

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "python"


def _source_version() -> str:
    """``__version__`` as written in the client's ``__init__.py`` (the one version source)."""
    tree = ast.parse((CLIENT / "src" / "cairn_context_client" / "__init__.py").read_text())
    (value,) = [
        n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign)
        and [getattr(t, "id", None) for t in n.targets] == ["__version__"]
        and isinstance(n.value, ast.Constant)
    ]
    return str(value)


def test_the_server_and_the_client_have_one_version():
    """The server reads the client's ``__version__``, pins the client to it, and the installed
    metadata of both agree (a bump without reinstalling shows here)."""
    version = _source_version()
    server = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert server["project"]["dynamic"] == ["version"]
    assert server["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "clients.python.src.cairn_context_client.__version__"
    }
    assert f"cairn-context-client=={version}" in server["project"]["dependencies"]
    assert server["tool"]["uv"]["sources"]["cairn-context-client"] == {"path": "clients/python"}
    client = tomllib.loads((CLIENT / "pyproject.toml").read_text())
    assert "version" in client["project"]["dynamic"] and "version" not in client["project"]
    assert importlib.metadata.version("cairn") == importlib.metadata.version("cairn-context-client") == version
    assert cairn_context_client.__version__ == version


def test_the_client_needs_only_httpx_and_websockets():
    """Its declared requirements: httpx and websockets; the frameworks only in their extras."""
    client = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]
    assert [r.split(">")[0].split("=")[0] for r in client["dependencies"]] == ["httpx", "websockets"]
    extras = {k: [r.split(">")[0] for r in v] for k, v in client["optional-dependencies"].items()}
    assert extras == {"langchain": ["langchain-core"], "llamaindex": ["llama-index-core"]}


def test_the_server_holds_no_copy_of_the_client():
    """``cairn.app.client`` is gone: the one client is ``cairn_context_client``, from clients/python."""
    assert not (ROOT / "app" / "client").exists()
    assert importlib.util.find_spec("cairn.app.client") is None
    where = Path(cairn_context_client.__file__).resolve()
    assert where.is_relative_to(CLIENT / "src"), where


@pytest.mark.slow  # builds the client's sdist and a wheel from it
def test_the_sdist_builds_a_wheel_of_the_client_alone(tmp_path):
    """The sdist is self-contained (a wheel builds from it, version included) and the wheel holds
    only ``cairn_context_client`` (with ``py.typed``) and requires httpx and websockets."""
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    env = {**os.environ, "PIP_NO_INDEX": "1"}  # flit_core is installed; nothing is fetched
    sdists = tmp_path / "sdist"
    subprocess.run(
        [sys.executable, "-c", f"import flit_core.buildapi as b; b.build_sdist({str(sdists)!r})"],
        cwd=CLIENT,
        check=True,
        timeout=120,
    )
    (sdist,) = sdists.glob("cairn_context_client-*.tar.gz")
    assert sdist.name == f"cairn_context_client-{_source_version()}.tar.gz"
    wheels = tmp_path / "wheel"
    cmd = [*pip, "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(sdist)]
    subprocess.run(cmd, check=True, timeout=300, env=env)
    (wheel,) = wheels.glob("cairn_context_client-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == {"cairn_context_client"}
    assert "cairn_context_client/py.typed" in names
    requires = sorted(line.split(": ", 1)[1] for line in meta.splitlines() if line.startswith("Requires-Dist: "))
    assert [r for r in requires if "extra ==" not in r] == ["httpx>=0.27", "websockets>=13"]
    assert f"Version: {_source_version()}" in meta
    # installed alone, it imports without anything of the server
    target = tmp_path / "site"
    cmd = [*pip, "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)]
    subprocess.run(cmd, check=True, timeout=300, env=env)
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import cairn_context_client as c; "
        "print(c.__file__); print(sorted(m for m in sys.modules if m == 'cairn' or m.startswith('cairn.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(target)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    where, server_modules = out.stdout.splitlines()
    assert where.startswith(str(target)) and server_modules == "[]"
