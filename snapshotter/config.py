"""Settings shared by every entry point: the data directory and size limits."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Literal

from snapshotter.errors import BadInput

DEFAULT_MAX_NEW_FILE_SIZE = 2 * 1024 * 1024
# What a checkpoint's file went through, and what span a checkpoint is (SPEC §4).
Status = Literal["added", "modified", "deleted"]
Kind = Literal["turn", "tool"]
# Who ran an undo, redo, reset, restore or checkpoint (the operation log): you from
# the shell, the agent through `snapshotter mcp`, or a runtime through the hook API.
Actor = Literal["shell", "agent", "hook"]
# The session `snapshotter checkpoint` records in: the user's own checkpoints and save
# points, shown and undone beside the agent's (issue 26.1).
MANUAL_SESSION = "cli"
# Retention (gc): sessions idle longer are dropped; checkpoints kept per session;
# the size budget per store, met by dropping the oldest sessions.
DEFAULT_MAX_AGE_DAYS = 30.0
DEFAULT_MAX_CHECKPOINTS = 1000
DEFAULT_MAX_STORE_BYTES = 1024**3
# No cap on a worktree's files by default: Chromium-sized trees are projects
# too. A home directory captured by mistake is refused another way (walk.py's
# guard); an explicit cap replaces that guard.
DEFAULT_MAX_FILES: int | None = None
_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "kib": 1024,
    "m": 1000**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1000**3,
    "gb": 1000**3,
    "gib": 1024**3,
}


def data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``--data-dir``, else ``$SNAPSHOTTER_DATA_DIR``, else the platform's user data dir."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    env = os.environ.get("SNAPSHOTTER_DATA_DIR")
    if env:
        return Path(env).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_data_dir("snapshotter", appauthor=False)).resolve()


def parse_size(text: str | int) -> int:
    """``2097152``, ``512KiB``, ``4MiB``, ``1.5MB`` → bytes."""
    if isinstance(text, int):
        value = text
    else:
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
        unit = match.group(2).lower() if match else None
        if match is None or unit not in _UNITS:
            raise BadInput(f"not a size: {text!r} (use bytes, KiB, MiB or GiB)")
        value = int(float(match.group(1)) * _UNITS[unit])
    if value < 0:
        raise BadInput(f"size must not be negative: {text!r}")
    return value


def format_size(n: int) -> str:
    """``n`` bytes the way help texts name sizes: 2MiB, 1GiB (what parse_size reads back)."""
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return f"{n}B"


def private_dir(path: Path) -> bool:
    """Make ``path`` a directory only its owner can enter (SPEC §2: snapshots hold copies
    of the user's files); parents are created as usual. True when an existing one of
    ours had to be closed (older versions created them 0755): its contents may need it too.
    """
    try:
        path.mkdir(mode=0o700)
        return False
    except FileExistsError:
        pass
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(mode=0o700, exist_ok=True)
        return False
    st = os.lstat(path)
    if not hasattr(os, "getuid"):
        return False  # not POSIX: mode bits do not decide who may read it
    if st.st_mode & 0o077 and st.st_uid == os.getuid() and not os.path.islink(path):
        os.chmod(path, st.st_mode & 0o700)
        return True
    return False


def make_private_tree(path: Path) -> None:
    """Strip group and other permissions from everything below ``path`` (ours only)."""
    if not hasattr(os, "getuid"):
        return  # not POSIX: mode bits do not decide who may read it
    uid = os.getuid()
    for dirpath, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
                if st.st_mode & 0o077 and st.st_uid == uid and not os.path.islink(full):
                    os.chmod(full, st.st_mode & 0o700)
            except OSError:
                continue


# The data directory's layout: stores under snapshot/, session records beside them.
STORES_DIR = "snapshot"
SESSIONS_DIR = "sessions"


def stores_dir(data_dir: Path) -> Path:
    """Where the stores (one per worktree) live."""
    return data_dir / STORES_DIR


def sessions_dir(data_dir: Path) -> Path:
    """Where session records live (a capture of a worktree holding it leaves it out)."""
    return data_dir / SESSIONS_DIR


def now_iso() -> str:
    """Now in UTC, as records carry it (``2026-11-23T05:16:28.123456Z``)."""
    seconds, ns = divmod(time.time_ns(), 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{ns // 1000:06d}Z"
