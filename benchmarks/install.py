"""The measured install: snapshotter laid out as ``pip install .`` lays it out.

What a user runs is a regular install: the package in site-packages, compiled,
and a console script. A developer's checkout is usually installed editable
(``pip install -e``, as the README's test command does), and setuptools then
makes every process of that venv import an import hook at start-up (a ``.pth``
file runs ``__editable___snapshotter_*_finder``: pathlib, urllib and more,
~10 ms of CPU), which is no figure of ours: at 10k files it was a fifth of a
served undo. So every measured process (the CLI, the hooks, the servers they
start, ``python -c pass`` for the floor) runs from a throwaway venv whose
site-packages holds the package being measured (a link to it, compiled by
``run.compile_measured``) and pip's console script, and sees this
interpreter's dependencies as plain path entries (their own ``.pth`` files,
that hook's among them, are not run).
"""

from __future__ import annotations

import importlib.util
import sysconfig
import venv
from pathlib import Path

# The console script pip writes for ``snapshotter = "snapshotter.cli.launcher:main"``.
SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from snapshotter.cli.launcher import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""


def measured_install(parent: Path) -> Path:
    """A venv under ``parent`` holding the package this interpreter imports as
    ``snapshotter`` (found without importing it); the venv's python."""
    spec = importlib.util.find_spec("snapshotter")
    if spec is None or spec.origin is None:
        raise RuntimeError("snapshotter is not importable here: install it first")
    package = Path(spec.origin).parent
    root = parent / "measured-install"
    venv.EnvBuilder(symlinks=True, with_pip=False).create(root)
    python = root / "bin" / "python"
    version = sysconfig.get_python_version()
    site = root / "lib" / f"python{version}" / "site-packages"
    (site / "snapshotter").symlink_to(package, target_is_directory=True)
    deps = dict.fromkeys(sysconfig.get_path(name) for name in ("purelib", "platlib"))
    (site / "measured_deps.pth").write_text("".join(f"{path}\n" for path in deps))
    script = root / "bin" / "snapshotter"
    script.write_text(SCRIPT.format(python=python))
    script.chmod(0o755)
    return python
