"""`pip install .` (a real wheel, not only the editable clone) holds everything Cairn needs.

The wheel is built from this checkout (``pip wheel --no-deps``, about 5 s), installed with
``pip install --target`` into a temporary folder, and run from another directory with the
clone's editable finder taken off ``sys.meta_path``: so every import, migration and static file
below comes from the wheel. The dependencies are the ones already in this virtualenv (installing
torch and the models again would cost minutes and prove nothing about Cairn's packaging).
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("app", "resolvers", "retrieval", "migrations")

# Runs the wheel's CLI with nothing of the clone importable: the clone's folders and the editable
# install's tree of links are dropped from sys.path (and any editable finder from sys.meta_path).
RUNNER = """
import sys
clone = {clone!r}
sys.path[:] = [{target!r}] + [
    p for p in sys.path if p.rstrip("/") not in (clone, "") and p != "." and "__editable__" not in p
]
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
import cairn.app.cli as cli
assert cli.__file__.startswith({target!r}), cli.__file__
for name in ("app", "resolvers", "retrieval"):
    try:
        __import__(name)
    except ImportError:
        pass
    else:
        raise SystemExit(f"top-level package {{name!r}} importable: it would clash with a user's own")
sys.argv = ["cairn", *sys.argv[1:]]
cli.main()
"""


def test_each_cairn_package_is_its_top_level_folder_and_the_checkout_has_no_links():
    """``cairn.<package>`` is the top-level folder itself (one copy of the code, setup.py maps
    it), and nothing in git is a symbolic link: a clone with ``core.symlinks=false`` works."""
    for name in PACKAGES:
        spec = importlib.util.find_spec(f"cairn.{name}")
        assert spec is not None and spec.submodule_search_locations, name
        (folder,) = spec.submodule_search_locations  # the editable install's tree of links
        first = "env.py" if name == "migrations" else "__init__.py"
        assert (Path(folder) / first).resolve() == ROOT / name / first, (name, folder)
    assert not (ROOT / "cairn").exists(), "a cairn/ folder in the clone would shadow the installed namespace"
    listing = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True)
    if listing.returncode != 0:  # a source tree without git (an unpacked sdist)
        pytest.skip("not a git checkout")
    links = [line.split("\t", 1)[1] for line in listing.stdout.splitlines() if line.startswith("120000 ")]
    assert links == []


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        timeout=300,
    )
    (built,) = out.glob("cairn-*.whl")
    return built


@pytest.mark.slow  # builds and installs a wheel
def test_the_wheel_installs_one_top_level_package_with_its_data(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        top_level = zf.read(next(n for n in names if n.endswith(".dist-info/top_level.txt"))).decode().split()
    assert top_level == ["cairn"]
    assert {n.split("/")[0] for n in names} == {"cairn", next(n for n in names if ".dist-info/" in n).split("/")[0]}
    # setup.py lists the packages of the four folders: nothing else of the clone (the demo's
    # cairn-data/, tests, bench) can ship, and cairn/ itself is a namespace (no __init__.py)
    assert {n.split("/")[1] for n in names if n.startswith("cairn/")} == set(PACKAGES)
    versions = sorted(p.name for p in (ROOT / "migrations" / "versions").glob("*.py"))
    assert sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("cairn/migrations/versions/")) == versions
    assert "cairn/migrations/env.py" in names and "cairn/migrations/script.py.mako" in names
    # every static asset and data file the server reads at run time
    for folder, pattern in [
        ("app/http/static", "**/*"),
        ("app/ontology", "*.yaml"),
        ("app/templates", "*.yaml"),
        ("app/fields", "*.json"),
    ]:
        wanted = {str(p.relative_to(ROOT)) for p in (ROOT / folder).glob(pattern) if p.is_file()}
        assert wanted, folder
        assert wanted <= {n.removeprefix("cairn/") for n in names}, sorted(wanted - set(names))[:5]


@pytest.mark.slow  # builds and installs a wheel, runs it in a fresh process
def test_the_installed_wheel_migrates_and_serves_its_static_assets(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        timeout=300,
    )
    runner = tmp_path / "run_cairn.py"
    runner.write_text(RUNNER.format(clone=str(ROOT), target=str(target)))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env["PYTHONPATH"] = ""

    def cairn_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(runner), *args], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=600
        )

    done = cairn_cli("migrate", "--data-dir", "data")
    assert done.returncode == 0, done.stderr
    heads = sorted(p.stem for p in (ROOT / "migrations" / "versions").glob("0*.py"))
    with sqlite3.connect(elsewhere / "data" / "cairn.db") as db:
        assert db.execute("select version_num from alembic_version").fetchone()[0] == heads[-1]
    # the static assets resolve inside the installed package (GraphiQL offline, the console)
    probe = cairn_cli("--help")
    assert probe.returncode == 0 and "serve" in probe.stdout
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            RUNNER.format(clone=str(ROOT), target=str(target)).split("import cairn.app.cli")[0]
            + "from cairn.app.http.graphiql import STATIC_DIR\nfrom cairn.app.http.console import CONSOLE_DIR\n"
            + "print(STATIC_DIR.is_dir(), CONSOLE_DIR.is_dir(), STATIC_DIR)",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0, check.stderr
    is_static, is_console, where = check.stdout.split()
    assert (is_static, is_console) == ("True", "True")
    assert where.startswith(str(target))
