"""What `snapshotter mcp` lets the agent do, as plain calls returning JSON-ready data.

Each tool returns the document the CLI's ``--json`` prints for the same
command, so the agent and the user read the same facts. The MCP wiring (the
SDK, the descriptions a model reads) is mcp_server.py; this module knows
nothing of the protocol, so it is tested in process.

Safe by default (issue 25.3): the agent acts on its own session only
(``AgentTools.session``) and never forces; ``Policy`` (the user's options to
``snapshotter mcp``) may allow either. Every change goes through the engine
with ``by="agent"``, so it is in the operation log (``snapshotter log``) and
``snapshotter redo`` from the shell takes it back.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from snapshotter.errors import BadInput, Conflict

if TYPE_CHECKING:
    from snapshotter.checkpoints import Restoration
    from snapshotter.cli.context import Ctx
    from snapshotter.engine import CheckpointDiff, Engine

# Where a runtime may tell its MCP servers which session they serve, in the order
# trusted. Each counts only if the hooks reported that session here (Claude
# Code's id under --continue is a fresh one the hooks never see; Gemini's and
# Codex's names are those their hooks and shells get, unverified for MCP servers).
SESSION_VARIABLES = (
    "SNAPSHOTTER_SESSION",
    "CLAUDE_CODE_SESSION_ID",
    "GEMINI_SESSION_ID",
    "CODEX_THREAD_ID",
    "CODEX_SESSION_ID",
)
# Where a runtime names the project it runs in; else the server's working directory.
PROJECT_VARIABLES = ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR")
DIFF_LINES = 200  # a diff's lines handed to the model, unless it asks for more
MAX_DIFF_LINES = 2000


@dataclass(frozen=True)
class Policy:
    """What the user allows the agent beyond its own session's safe undo (default: nothing)."""

    allow_force: bool = False  # may overwrite files changed since a checkpoint
    any_session: bool = False  # may list and change other sessions' checkpoints


class Refusal(Exception):
    """A tool call refused: ``data`` is the JSON document the agent gets back."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data["error"])
        self.data = data


@dataclass
class AgentTools:
    """The tools, over the worktree of ``directory`` (default: the runtime's project)."""

    c: Ctx
    policy: Policy = Policy()
    directory: str | None = None

    def where(self) -> str:
        if self.directory is not None:
            return self.directory
        return next((v for k in PROJECT_VARIABLES if (v := os.environ.get(k))), ".")

    def engine(self, *, create: bool = False) -> Engine:
        return self.c.engine(self.where(), create=create)

    def session(self, engine: Engine, asked: str | None = None) -> str:
        """The agent's session: the runtime's (as the environment names it and the hooks
        reported it), else the one with an open turn or the newest checkpoint here.
        Another one only where the user allowed it."""
        own = engine.agent_session(*(os.environ.get(k) for k in SESSION_VARIABLES))
        if asked and asked != own:
            if not self.policy.any_session:
                raise BadInput(
                    f"session {asked} is not yours ({own}); the user has not allowed other "
                    "sessions (snapshotter mcp --any-session)"
                )
            return asked
        return own

    # -- looking ---------------------------------------------------------------------

    def list_checkpoints(self, all_sessions: bool = False) -> dict[str, Any]:
        from snapshotter.errors import NothingToDo

        if all_sessions and not self.policy.any_session:
            raise BadInput(
                "the user has not allowed other sessions (snapshotter mcp --any-session)"
            )
        try:
            engine = self.engine()
            session = self.session(engine)
        except NothingToDo:
            return {"session": None, "checkpoints": []}
        cps = engine.checkpoints(None if all_sessions else session)
        return {"session": session, "checkpoints": [cp.model_dump(mode="json") for cp in cps]}

    def show_checkpoint(self, checkpoint_id: int, max_lines: int = DIFF_LINES) -> dict[str, Any]:
        engine = self.engine()
        cp = engine.show(checkpoint_id)
        self._mine(engine, cp.session_id)
        shown = _diff_json(engine.checkpoint_diff(cp), max_lines)
        return {**cp.model_dump(mode="json"), "diff": shown}

    def diff_to_now(
        self, checkpoint_id: int | None = None, max_lines: int = DIFF_LINES
    ) -> dict[str, Any]:
        engine = self.engine()
        cp = engine.show(checkpoint_id, self.session(engine))
        self._mine(engine, cp.session_id)
        return _diff_json(engine.checkpoint_diff(cp, to_now=True), max_lines)

    def _mine(self, engine: Engine, session_id: str) -> None:
        if not self.policy.any_session:
            self.session(engine, session_id)  # refuses another session's

    # -- changing (each one undoable: `snapshotter redo` takes it back) ------------

    def undo(self, dry_run: bool = False, force: bool = False, session: str | None = None) -> Any:
        engine = self.engine()
        sid = self.session(engine, session)
        how = self._how(dry_run, force)
        return self._done("undo", lambda: engine.undo(sid, by="agent", **how))

    def redo(self, dry_run: bool = False, force: bool = False, session: str | None = None) -> Any:
        engine = self.engine()
        sid = self.session(engine, session)
        how = self._how(dry_run, force)
        return self._done("redo", lambda: engine.redo(sid, by="agent", **how))

    def restore_files(
        self,
        checkpoint_id: int,
        paths: list[str],
        after: bool = False,
        dry_run: bool = False,
        force: bool = False,
    ) -> Any:
        engine = self.engine()
        sid = self.session(engine)
        self._mine(engine, engine.show(checkpoint_id).session_id)
        rels = [_relative(p, str(engine.root)) for p in paths]
        how = self._how(dry_run, force)
        return self._done(
            "restore",
            lambda: engine.restore_files(sid, checkpoint_id, rels, after=after, by="agent", **how),
        )

    def checkpoint(self, label: str) -> dict[str, Any]:
        from snapshotter.errors import NothingToDo

        engine = self.engine(create=True)
        try:
            sid = self.session(engine)
        except NothingToDo:  # no hook reported a session here: the runtime's, else "agent"
            sid = next((v for k in SESSION_VARIABLES if (v := os.environ.get(k))), "agent")
        # A label makes it a save point: recorded even when nothing changed (issue 26.1).
        cp = engine.checkpoint(label or "save point", sid, by="agent")
        assert cp is not None, "a labelled checkpoint is always recorded"
        return cp.model_dump(mode="json")

    def _how(self, dry_run: bool, force: bool) -> dict[str, bool]:
        if force and not self.policy.allow_force:
            raise BadInput(
                "force is not allowed: the user has not allowed the agent to overwrite their "
                "changes (snapshotter mcp --allow-force); ask them instead"
            )
        return {"dry_run": dry_run, "force": force}

    def _done(self, op: str, act: Any) -> dict[str, Any]:
        """The report of ``act``; a refusal over the user's edits as data the model relays."""
        try:
            rep: Restoration = act()
        except Conflict as exc:
            raise Refusal(_refusal(op, exc)) from exc
        return rep.to_model().model_dump(mode="json")


def _refusal(op: str, exc: Conflict) -> dict[str, Any]:
    from snapshotter.names import display, encode

    yours = [display(p) for p in exc.paths if exc.by[p] == "you"]
    others = [display(p) for p in exc.paths if exc.by[p] != "you"]
    said = f"I did not {op}: "
    if yours:
        said += f"you changed {', '.join(yours[:5])} since then"
    if others:
        said += f"{'; ' if yours else ''}another session changed {', '.join(others[:5])}"
    said += ". Nothing was changed. Keep your edits, or run `snapshotter " + op
    said += " --force` yourself to overwrite them (`snapshotter redo` brings them back)."
    return {
        "error": str(exc),
        "exit_code": exc.exit_code,
        "refused": True,
        "files": [{"path": encode(p), "changed_by": exc.by[p]} for p in exc.paths],
        "tell_the_user": said,
    }


def _diff_json(shown: CheckpointDiff, max_lines: int) -> dict[str, Any]:
    """``diff --json``'s document with the patch itself, cut at ``max_lines`` lines."""
    from snapshotter.cli.diff_render import file_json, patch_text
    from snapshotter.names import encode

    limit = max(1, min(max_lines, MAX_DIFF_LINES))
    lines = patch_text(shown.files).decode("utf-8", "replace").splitlines(keepends=True)
    return {
        "checkpoint": shown.checkpoint.id,
        "from": shown.checkpoint.before,
        "to": shown.to,
        "to_now": shown.to_now,
        "files": [file_json(d) for d in shown.files],
        "skipped": [{"path": encode(p), "reason": r} for p, r in shown.skipped],
        "patch": "".join(lines[:limit]),
        "patch_lines": len(lines),
        "truncated": len(lines) > limit,
    }


def _relative(path: str, root: str) -> str:
    """A path the model gave (worktree-relative, or absolute inside it) as a worktree path."""
    from pathlib import PurePosixPath

    if os.path.isabs(path):
        rel = os.path.relpath(os.path.realpath(path), root)
        if rel == ".." or rel.startswith(".." + os.sep):
            raise BadInput(f"{path} is not inside the worktree {root}")
        path = rel
    return PurePosixPath(path.replace(os.sep, "/")).as_posix()
