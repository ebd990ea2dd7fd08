"""Recorded sessions and repository recipes (``fixtures/``), and replaying them.

The demo, the tests and the benchmarks all play the same recordings, so what
the demo shows is what the tests prove.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

Event = dict[str, Any]


def load_session(name: str) -> dict[str, Any]:
    text = resources.files("snapshotter._fixtures").joinpath("sessions", f"{name}.json")
    data: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return data


def session_names() -> list[str]:
    folder = resources.files("snapshotter._fixtures").joinpath("sessions")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def load_recipe(name: str) -> dict[str, Any]:
    text = resources.files("snapshotter._fixtures").joinpath("repos", f"{name}.json")
    data: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return data


def build_repo(root: Path, recipe: dict[str, Any]) -> Path:
    """A git repository with the recipe's files committed, made with pygit2 alone."""
    from snapshotter.engine import commit_all

    root.mkdir(parents=True, exist_ok=True)
    for rel, content in recipe.get("files", {}).items():
        _write(root, rel, content)
    commit_all(root, "initial", name="snapshotter demo", email="demo@example.invalid")
    for rel, content in recipe.get("untracked", {}).items():
        _write(root, rel, content)
    return root


def apply_edits(root: Path, edits: list[dict[str, str]]) -> None:
    """What a tool did between two events: writes and deletes."""
    for edit in edits:
        path = root / edit["path"]
        if edit["op"] == "write":
            _write(root, edit["path"], edit["content"])
        elif edit["op"] == "delete":
            path.unlink()


def replay(session: dict[str, Any], root: Path, send: Callable[[Event], None]) -> int:
    """Apply each step: edits to ``root``, events (with ``cwd``) to ``send``.

    An event's recorded ``cwd`` is relative to the repository (Claude Code
    sends its shell's current directory, so after a ``cd src`` it is ``src``);
    ``{root}`` in any string stands for the repository's absolute path.
    """
    sent = 0
    for step in session["steps"]:
        apply_edits(root, step.get("edits", []))
        if "event" in step:
            event = _with_root(step["event"], str(root))
            send({**event, "cwd": str(root / event.get("cwd", ""))})
            sent += 1
    return sent


def _with_root(value: Any, root: str) -> Any:
    if isinstance(value, str):
        return value.replace("{root}", root)
    if isinstance(value, dict):
        return {k: _with_root(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_root(v, root) for v in value]
    return value


def _write(root: Path, rel: str, content: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
