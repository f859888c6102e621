"""Package layout for setuptools (everything else is in pyproject.toml).

The code lives in the top-level folders the project documents (``app/``, ``resolvers/``,
``retrieval/``, ``migrations/``) and is installed under one namespace, ``cairn.*``, so a
user's own ``app`` or ``retrieval`` package never clashes with ours. ``package_dir`` maps each
``cairn.<name>`` to its folder: the wheel holds real copies; ``scripts/install`` makes the
editable install in setuptools' *strict* mode, a tree of links under ``build/`` that mypy,
import-linter and IDEs resolve like installed files (the default *lenient* mode is an import
hook that static tools cannot follow). Nothing in the checkout is a symbolic link, so a clone
with ``core.symlinks=false`` (Windows' default) works. ``cairn`` itself is a namespace package
(PEP 420, no ``__init__.py``): a ``cairn/`` folder at the top of the clone would shadow the
installed one whenever the clone is the working directory.
"""

from setuptools import find_packages, setup

FOLDERS = ("app", "resolvers", "retrieval", "migrations")

setup(
    packages=[f"cairn.{folder}" for folder in FOLDERS]
    + [f"cairn.{folder}.{sub}" for folder in FOLDERS for sub in find_packages(folder)],
    package_dir={f"cairn.{folder}": folder for folder in FOLDERS},
)
