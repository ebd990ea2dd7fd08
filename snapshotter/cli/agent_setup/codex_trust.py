"""Codex's trust for snapshotter's hooks: the project and each of our hooks recorded
as trusted in ``$CODEX_HOME/config.toml`` (``init codex --trust``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from snapshotter.cli.agent_setup.config_files import Setup, read_text, write
from snapshotter.cli.agent_setup.hook_entry import is_ours
from snapshotter.errors import SnapshotterError


def trust(hooks_file: Path, project: Path, *, dry_run: bool = False) -> Setup:
    """Trust the project and snapshotter's hooks in ``$CODEX_HOME/config.toml``.

    Codex runs a project's hooks only when the project is trusted and each hook's
    ``trusted_hash`` (``dialects.codex.trusted_hash``) is recorded under
    ``[hooks.state."FILE:EVENT:GROUP:HANDLER"]``; without them it skips them
    silently. Only our own hooks are trusted; a table that is already there is
    never written twice (Codex would then load no hook at all).
    """
    import tomllib

    from snapshotter.hooks.dialects import codex

    home = os.environ.get("CODEX_HOME") or str(Path.home() / ".codex")
    path = Path(home) / "config.toml"
    old_text = read_text(path)
    try:
        current = tomllib.loads(old_text)
    except tomllib.TOMLDecodeError as exc:
        raise SnapshotterError(f"{path} is not TOML ({exc}); fix it, then run init again") from exc
    hooks = json.loads(hooks_file.read_text("utf-8")).get("hooks", {})
    state = current.get("hooks", {}).get("state", {})
    lines: list[str] = []
    if str(project) not in current.get("projects", {}):
        lines += [f"[projects.{json.dumps(str(project))}]", 'trust_level = "trusted"', ""]
    for event, groups in hooks.items():
        for g, group in enumerate(groups if event in codex.LABELS else []):
            for h, handler in enumerate(group.get("hooks", [])):
                if not is_ours(handler.get("command")):
                    continue
                key = f"{hooks_file}:{codex.LABELS[event]}:{g}:{h}"
                digest = codex.trusted_hash(event, group.get("matcher"), handler)
                have = state.get(key)
                if isinstance(have, dict) and have.get("trusted_hash") == digest:
                    continue
                if have is not None:
                    raise SnapshotterError(
                        f"{path} trusts another version of {key}; trust snapshotter's "
                        "hooks with /hooks in Codex instead"
                    )
                lines += [f"[hooks.state.{json.dumps(key)}]", f'trusted_hash = "{digest}"', ""]
    if not lines:
        return Setup(path, old_text, changed=False)
    kept = old_text if not old_text or old_text.endswith("\n") else old_text + "\n"
    text = kept + ("\n" if kept else "") + "# trusted by snapshotter init codex --trust\n"
    text += "\n".join(lines)
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SnapshotterError(
            f"cannot add the trust to {path} ({exc}); trust the hooks with /hooks in Codex"
        ) from exc
    return write(path, old_text, text, dry_run)
