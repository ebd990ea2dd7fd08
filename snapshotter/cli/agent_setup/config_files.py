"""An agent's config file as ``init`` changes it: read, replaced atomically with its
mode kept and a backup beside it, and what was done said as a ``Setup``."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snapshotter.errors import SnapshotterError
from snapshotter.fileio import write_atomic


@dataclass(frozen=True)
class Setup:
    """What ``init`` did (or, with ``--dry-run``, would do) to one file."""

    path: Path | None  # None: nothing to write, the text is for pasting
    text: str  # the file's new content, or the block to paste
    changed: bool
    backup: Path | None = None


def read_text(path: Path) -> str:
    """The file's text; empty when it does not exist."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotterError(f"cannot read {path}: {exc}") from exc


def read_json(path: Path) -> tuple[str, dict[str, Any]]:
    """The file's text and the JSON object it holds (empty when there is no file)."""
    text = read_text(path)
    try:
        document = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise SnapshotterError(
            f"{path} is not JSON ({exc}); fix or move it, then run init again"
        ) from exc
    if not isinstance(document, dict):
        raise SnapshotterError(f"{path} does not hold a JSON object; fix or move it first")
    return text, document


def write(path: Path, old_text: str, text: str, dry_run: bool) -> Setup:
    """Replace ``old_text`` at ``path`` by ``text``, backing the old one up first."""
    if dry_run:
        return Setup(path, text, changed=True)
    backup = None
    try:
        mode = path.stat().st_mode & 0o777 if old_text else 0o666 & ~_umask()
        if old_text:
            backup = path.with_name(f"{path.name}.{time.strftime('%Y%m%d-%H%M%S')}.bak")
            write_atomic(backup, old_text.encode("utf-8"))
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text.encode("utf-8"))
        os.chmod(path, mode)  # the user's file keeps its mode (temp files are 0600)
    except OSError as exc:
        raise SnapshotterError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return Setup(path, text, changed=True, backup=backup)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
