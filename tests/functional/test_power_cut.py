"""Issue 28: a real power cut, where the machine allows one (root and dm-flakey).

The data directory lives on an ext4 filesystem over a ``dm-flakey`` device.
A working session runs (a first capture, agent turns, an undo); then the
device starts dropping every write, as xfstests' ``_flakey_drop_and_remount``
does: whatever was still in the page cache when the machine "stopped" never
reaches the disk. After a remount, every checkpoint the records on disk name
must still be whole in the store, and ``undo`` must work.

Elsewhere (no root, no device-mapper in the kernel: containers, most VMs)
the test is skipped with the reason; the write-order tracer
(test_write_order.py) checks the same order everywhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import edit_files, event, hook_ok, make_repo, reachable, run_cli, store_root

TOOLS = ("dmsetup", "losetup", "blockdev", "mkfs.ext4", "mount", "umount")


def _why_not() -> str | None:
    """Why this machine cannot cut the power under a filesystem (None: it can)."""
    if os.geteuid() != 0:
        return "needs root (a loop device, device-mapper and mount)"
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return f"not installed: {', '.join(missing)}"
    targets = subprocess.run(["dmsetup", "targets"], capture_output=True, text=True)
    if targets.returncode != 0:
        return f"device-mapper is not available in this kernel ({_first_line(targets.stderr)})"
    if "flakey" not in targets.stdout and shutil.which("modprobe") is not None:
        subprocess.run(["modprobe", "dm-flakey"], capture_output=True)
        targets = subprocess.run(["dmsetup", "targets"], capture_output=True, text=True)
    if "flakey" not in targets.stdout:
        return "the dm-flakey target is not available in this kernel"
    return None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "no reason given"


WHY_NOT = _why_not()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))


def _run(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip()


class Flakey:
    """An ext4 filesystem on a dm-flakey device over a loop file, that can lose power."""

    def __init__(self, image: Path, mount: Path) -> None:
        self.image, self.mount = image, mount
        self.name = f"snapshotter-flakey-{os.getpid()}"
        with image.open("wb") as f:
            f.truncate(256 << 20)
        self.loop = _run("losetup", "-f", "--show", str(image))
        self.sectors = _run("blockdev", "--getsz", self.loop)
        _run("dmsetup", "create", self.name, "--table", self._table(drop=False))
        self.device = f"/dev/mapper/{self.name}"
        _run("mkfs.ext4", "-q", self.device)
        mount.mkdir()
        _run("mount", self.device, str(mount))

    def _table(self, *, drop: bool) -> str:
        if drop:  # always down, every write silently dropped
            return f"0 {self.sectors} flakey {self.loop} 0 0 180 1 drop_writes"
        return f"0 {self.sectors} flakey {self.loop} 0 180 0"

    def _load(self, *, drop: bool) -> None:
        # --nolockfs: a plain suspend freezes the filesystem, which syncs it first.
        _run("dmsetup", "suspend", "--nolockfs", self.name)
        _run("dmsetup", "load", self.name, "--table", self._table(drop=drop))
        _run("dmsetup", "resume", self.name)

    def power_cut(self) -> None:
        """Drop every write from now on, unmount (what the page cache held is lost),
        then take writes again and mount: the disk as a power cut left it."""
        self._load(drop=True)
        _run("umount", str(self.mount))
        self._load(drop=False)
        _run("mount", self.device, str(self.mount))

    def close(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            _run("umount", str(self.mount))
        with contextlib.suppress(subprocess.CalledProcessError):
            _run("dmsetup", "remove", self.name)
        with contextlib.suppress(subprocess.CalledProcessError):
            _run("losetup", "-d", self.loop)


@pytest.fixture
def flakey(tmp_path: Path) -> Iterator[Flakey]:
    device = Flakey(tmp_path / "disk.img", tmp_path / "mnt")
    try:
        yield device
    finally:
        device.close()


def test_every_recorded_checkpoint_survives_a_power_cut(tmp_path: Path, flakey: Flakey) -> None:
    data_dir = flakey.mount / "data"
    root = make_repo(tmp_path / "repo", {f"src/m{i}.py": f"X = {i}\n" for i in range(80)})
    env = {"SNAPSHOTTER_DATA_DIR": str(data_dir)}
    assert run_cli("capture", cwd=root, env=env).returncode == 0
    for turn in range(5):
        hook_ok(event("turn_start", root), env=env)
        edit_files(root, {f"src/m{turn}.py": f"X = 'turn {turn}'\n", f"new/t{turn}.py": "T\n"})
        hook_ok(event("turn_end", root), env=env)
    assert run_cli("undo", cwd=root, env=env).returncode == 0

    flakey.power_cut()

    store = store_root(data_dir)
    state = json.loads((store / "state.json").read_bytes())
    trees = [t for cp in state["checkpoints"] for t in (cp["before"], cp["after"])]
    assert trees, "state.json names checkpoints"
    reachable(store / "git", trees)  # fails on any object the records name but the disk lost
    done = run_cli("undo", cwd=root, env=env)
    assert done.returncode == 0, done.stderr
