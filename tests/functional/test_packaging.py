"""What ``pip install .`` (not editable) puts in place: every package of the source.

The suite runs from an editable install, which finds any package in the
checkout; a package missing from pyproject.toml's list only fails for users.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

TOP = Path(__file__).parents[2]


def test_every_package_of_the_source_is_installed() -> None:
    listed = set(
        tomllib.loads((TOP / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(TOP).parts)
        for init in (TOP / "snapshotter").rglob("__init__.py")
    }
    assert found <= listed, f"not in pyproject.toml's packages: {sorted(found - listed)}"
