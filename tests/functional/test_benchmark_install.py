"""benchmarks/install.py: the measured processes run snapshotter as ``pip install .``
lays it out, not through an editable install's start-up import hook."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import snapshotter

REPO_ROOT = Path(__file__).resolve().parents[2]
MAKE = """
import sys
from pathlib import Path
from benchmarks.install import measured_install
print(measured_install(Path(sys.argv[1])))
"""

PROBE = """
import sys, snapshotter
hooks = [m for m in sys.modules if m.startswith("__editable__")]
print(snapshotter.__file__)
print(",".join(hooks) or "-")
"""


def test_the_measured_install_runs_this_package_without_an_import_hook(tmp_path: Path) -> None:
    made = subprocess.run(
        [sys.executable, "-c", MAKE, tmp_path],
        cwd=REPO_ROOT,  # (benchmarks/ is a package of the checkout, not installed)
        capture_output=True,
        text=True,
        check=True,
    )
    python = Path(made.stdout.strip())
    work = tmp_path / "elsewhere"  # not the checkout: its directory would come first
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [python, "-c", PROBE], cwd=work, env=env, capture_output=True, text=True, check=True
    )
    imported, hooks = done.stdout.split()
    assert Path(imported).resolve() == Path(snapshotter.__file__).resolve()
    assert hooks == "-", f"the editable install's import hook ran: {hooks}"
    script = python.parent / "snapshotter"
    version = subprocess.run(
        [script, "--version"], cwd=work, env=env, capture_output=True, text=True, check=True
    )
    assert snapshotter.__version__ in version.stdout
