"""The failure log in the data directory (hook errors must go somewhere visible)."""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from pathlib import Path

from snapshotter.config import private_dir, stores_dir

MAX_LOG_BYTES = 1024 * 1024


def log_path(data_dir: Path) -> Path:
    return stores_dir(data_dir) / "hook.log"


def append(data_dir: Path, message: str) -> None:
    """Append one line; never raises (a read-only data dir must not break the hook)."""
    path = log_path(data_dir)
    with contextlib.suppress(OSError):
        private_dir(path.parent.parent)
        private_dir(path.parent)
        with contextlib.suppress(OSError):
            if path.stat().st_size > MAX_LOG_BYTES:
                os.replace(path, path.with_suffix(".log.1"))
        line = " ".join(message.split())[:4000]
        with open(path, "a", encoding="utf-8", errors="replace") as f:
            stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            f.write(f"{stamp} {line}\n")
