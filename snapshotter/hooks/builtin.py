"""The ``snapshot`` builtin and the controller a runtime holds on to (SPEC §4, §8).

Both are adapters over the engine: the builtin turns a lifecycle event into a
call of the session's recorder, the controller a runtime's undo, redo, reset
or list into the engine's. ``snapshotter hook`` imports this module once per
event it handles itself, so only what capturing needs is imported here; the
registry's models and retention are imported where they are used (issue 16.4).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from snapshotter.checkpoints import Record
from snapshotter.config import (
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_NEW_FILE_SIZE,
    data_dir,
    parse_size,
)
from snapshotter.engine import Engine, RestoreOptions, open_existing
from snapshotter.engine.sessions import first_stop, open_session
from snapshotter.errors import BadInput, NotAWorktree, NothingToDo, SnapshotterError
from snapshotter.hooks import events as ev

if TYPE_CHECKING:
    from snapshotter.engine.maintenance import Policy
    from snapshotter.engine.serving import Resident
    from snapshotter.hooks.events import Event
    from snapshotter.hooks.registry import HooksConfig, Registry
    from snapshotter.hooks.wire import HookInput, HookOutput
    from snapshotter.models import Checkpoint, RestoreReport

BUILTIN_NAME = "snapshot"
AUTO_EVENTS = (ev.SESSION_START, ev.USER_PROMPT_SUBMIT, ev.TURN_START, ev.TURN_END, ev.SESSION_END)
SESSION_END_GC_BUDGET_S = 2.0


def parse_args(args: list[str]) -> dict[str, str]:
    """Builtin args are ``key=value`` strings, e.g. ``max_new_file_size=4MiB``."""
    options = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep:
            raise BadInput(f"snapshot builtin arg {arg!r} is not key=value")
        options[key.strip()] = value.strip()
    return options


class SnapshotBuiltin:
    """Callable registered as ``snapshot``: one lifecycle event in, nothing out."""

    def __init__(
        self,
        *,
        enabled: bool = True,
        data_dir_path: str | os.PathLike[str] | None = None,
        max_new_file_size: int = DEFAULT_MAX_NEW_FILE_SIZE,
        resident: Resident | None = None,
    ) -> None:
        self.enabled = enabled
        self.data_dir = data_dir(data_dir_path)
        self.max_new_file_size = max_new_file_size
        # A long-lived caller's watchers and caches (the hook server's: store/resident.py).
        self.resident = resident
        self.last_session: dict[Path, str] = {}  # worktree root → newest session seen

    def __call__(self, hook_input: HookInput, args: list[str]) -> HookOutput | None:
        if not self.enabled or hook_input.event not in ev.SNAPSHOT_EVENTS:
            return None
        try:
            self.record(hook_input, args)
        except SnapshotterError as exc:  # never block or break the agent
            log_failure(self.data_dir, f"{hook_input.event}: {exc}")
        return None

    def handle(self, hook_input: HookInput, args: list[str]) -> Checkpoint | None:
        """Process one event; raises on failure (``__call__`` logs instead)."""
        recorded = self.record(hook_input, args)
        return None if recorded is None else recorded.to_model()

    def record(self, hook_input: HookInput | Event, args: list[str]) -> Record | None:
        """``handle`` without pydantic: ``snapshotter hook`` hands its plain event here
        (``events.parse``) and gets the checkpoint as the state keeps it (issue 16.4).
        """
        if not hook_input.session_id or not hook_input.cwd:
            raise BadInput("hook input needs session_id and cwd")
        options = parse_args(args)
        limit = parse_size(options.get("max_new_file_size", self.max_new_file_size))
        max_files = (
            _int_option(options, "max_files") if "max_files" in options else DEFAULT_MAX_FILES
        )
        # The session's first event fixes where it works (agents ``cd``; SPEC §3).
        session = hook_input.session_id
        try:
            engine = open_session(
                self.data_dir,
                session,
                hook_input.cwd,
                options.get("project_dir"),
                max_new_file_size=limit,
                max_files=max_files,
                resident=self.resident,
            )
        except NotAWorktree:
            # A session that was recording (it has a directory) says once why it stopped.
            stopped = first_stop(self.data_dir, session)
            if stopped is not None:
                _say_stopped(self.data_dir, hook_input.event, session, stopped)
            return None  # outside a git worktree every event is a no-op
        seen(engine.store_dir, options.get("source"))
        if engine.recovered is not None:  # a hook prints nothing: the line goes to hook.log
            log_failure(self.data_dir, f"snapshotter hook: {engine.recovered}")
        self.last_session[engine.root] = session
        return _dispatch(engine, session, hook_input, options)


def _say_stopped(data_dir: Path, event: str, session: str, directory: str) -> None:
    """One hook.log line when a session's worktree lost its ``.git`` (issue 21.5): a session
    that began outside git stays a silent no-op (SPEC §3), this one was recording."""
    import shlex

    log_failure(
        data_dir,
        f"{event}: session {session}: capture stopped: {directory} is no longer a git "
        "worktree (its .git is gone); the store still has its files as last captured: "
        f"`snapshotter -C {shlex.quote(directory)} recover` writes them back",
    )


SEEN_PREFIX = "seen-"  # store file touched by each event from a runtime: ``seen-codex``


def seen(store_root: Path, source: str | None) -> None:
    """Remember when an event from ``source`` (a dialect's name) last arrived here,
    as a file's mtime (``snapshotter doctor`` reads it); one syscall or two."""
    from snapshotter.hooks.dialects import by_name

    if not source or by_name(source) is None:
        return
    path = store_root / f"{SEEN_PREFIX}{source}"
    try:
        os.utime(path)
    except FileNotFoundError:
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    except OSError:
        pass


def worktree_paths(root: Path, paths: list[str]) -> list[str]:
    """Absolute paths as ``/``-separated paths inside ``root``; others are dropped."""
    found = []
    for path in paths:
        for candidate in (path, os.path.realpath(path)):
            rel = os.path.relpath(candidate, root)
            if rel != "." and not rel.startswith(".."):
                found.append(Path(rel).as_posix())
                break
    return found


def _int_option(options: dict[str, str], key: str) -> int:
    try:
        return int(options[key])
    except ValueError as exc:
        raise BadInput(f"snapshot builtin arg {key} must be a whole number") from exc


def retention_policy(options: dict[str, str]) -> Policy:
    """Retention from builtin args: max_age_days, max_checkpoints, max_store_size."""
    from snapshotter.config import (
        DEFAULT_MAX_AGE_DAYS,
        DEFAULT_MAX_CHECKPOINTS,
        DEFAULT_MAX_STORE_BYTES,
    )
    from snapshotter.engine.maintenance import Policy

    try:
        return Policy(
            float(options.get("max_age_days", DEFAULT_MAX_AGE_DAYS)),
            int(options.get("max_checkpoints", DEFAULT_MAX_CHECKPOINTS)),
            parse_size(options.get("max_store_size", DEFAULT_MAX_STORE_BYTES)),
        )
    except ValueError as exc:
        raise BadInput(f"bad retention arg: {exc}") from exc


def _dispatch(
    engine: Engine, session: str, hook_input: HookInput | Event, options: dict[str, str]
) -> Record | None:
    event = hook_input.event
    recorder = engine.recorder(session)
    if event == ev.SESSION_START:
        return recorder.session_start()
    elif event == ev.TURN_START:
        return recorder.turn_start(hook_input.prompt)
    elif event == ev.USER_PROMPT_SUBMIT:
        recorder.remember_prompt(hook_input.prompt)
    elif event == ev.TURN_END:
        return recorder.turn_end(hook_input.reason)
    elif event == ev.PRE_TOOL_USE:
        asked = hook_input.named_paths()
        named = worktree_paths(engine.root, asked)
        if len(named) < len(asked):  # (once per tool: its post names the same paths)
            outside = [p for p in asked if not worktree_paths(engine.root, [p])]
            log_failure(
                engine.data_dir,
                f"{hook_input.tool_name or 'tool'} names {', '.join(outside)}, outside the "
                f"worktree {engine.root}: not snapshotted, undo cannot restore it",
            )
        recorder.tool_start(
            hook_input.tool_use_id, hook_input.tool_name, named, hook_input.command()
        )
    elif event == ev.POST_TOOL_USE:
        named = worktree_paths(engine.root, hook_input.named_paths())
        return recorder.tool_end(
            hook_input.tool_use_id,
            hook_input.tool_name,
            named,
            hook_input.command(),
            failed=hook_input.reason == "failed",
        )
    elif event == ev.SESSION_END:
        checkpoint = recorder.session_end()
        _start_gc(engine, options)
        return checkpoint
    return None


def _start_gc(engine: Engine, options: dict[str, str]) -> None:
    """Never on the runtime's clock (issue 11.4, 13.13): the gc runs in a process of
    its own (detached_gc.py), holding the store lock only in short moments."""
    from snapshotter.hooks import detached_gc

    policy = retention_policy(options)
    try:
        due = engine.gc_due(policy)
    except (OSError, SnapshotterError):
        due = True  # no telling from here: the gc itself decides, under the lock
    if not due:
        return  # nothing to drop or compact: no process (~0.13 s of CPU) for nothing
    try:
        detached_gc.start(
            engine.data_dir, engine.root, budget_s=SESSION_END_GC_BUDGET_S, policy=policy
        )
    except OSError as exc:  # no process to spare: the next session_end tries again
        log_failure(engine.data_dir, f"session_end gc: {exc}")


class SnapshotController:
    """Undo, redo, reset and list for a runtime that registered the builtin.

    A thin adapter over the engine: each call opens the engine of ``cwd``'s
    worktree and picks the session (explicit, else the last one this runtime
    recorded there, else the newest).
    """

    def __init__(self, builtin: SnapshotBuiltin) -> None:
        self.builtin = builtin

    def _engine(self, cwd: str | os.PathLike[str]) -> Engine:
        return open_existing(cwd, data_dir_path=self.builtin.data_dir)

    def _session(self, engine: Engine, session_id: str | None) -> str:
        """Explicit, else the last session this runtime saw here, else the newest."""
        return engine.resolve_session(session_id, self.builtin.last_session.get(engine.root))

    def list(
        self, cwd: str | os.PathLike[str], session_id: str | None = None, all_sessions: bool = False
    ) -> list[Checkpoint]:
        """The session's checkpoints (every session's with ``all_sessions``); none
        where nothing was recorded."""
        try:
            engine = self._engine(cwd)
        except NothingToDo:
            return []
        return engine.checkpoints(
            None if all_sessions else self._session_or_none(engine, session_id)
        )

    def _session_or_none(self, engine: Engine, session_id: str | None) -> str | None:
        try:
            return self._session(engine, session_id)
        except NothingToDo:
            return None

    def undo_last(
        self,
        cwd: str | os.PathLike[str],
        session_id: str | None = None,
        **how: Unpack[RestoreOptions],
    ) -> RestoreReport:
        """Revert the session's newest checkpoint (``Engine.undo``)."""
        engine = self._engine(cwd)
        return engine.undo(self._session(engine, session_id), by="hook", **how).to_model()

    def redo(
        self,
        cwd: str | os.PathLike[str],
        session_id: str | None = None,
        **how: Unpack[RestoreOptions],
    ) -> RestoreReport:
        """Put back what the session's last undo or reset took away (``Engine.redo``)."""
        engine = self._engine(cwd)
        return engine.redo(self._session(engine, session_id), by="hook", **how).to_model()

    def reset(
        self,
        cwd: str | os.PathLike[str],
        keep: int | None = None,
        session_id: str | None = None,
        **how: Unpack[RestoreOptions],
    ) -> RestoreReport:
        """Revert every checkpoint after ``keep``; ``keep=None`` goes back to the original."""
        engine = self._engine(cwd)
        return engine.reset(self._session(engine, session_id), keep, by="hook", **how).to_model()

    def auto_inject(self, config: HooksConfig | dict[str, Any] | None) -> HooksConfig:
        """Add the builtin where ``settings: snapshot: true`` would (idempotent)."""
        from snapshotter.hooks.registry import HookDefinition, HooksConfig

        parsed = config if isinstance(config, HooksConfig) else HooksConfig.parse(config)
        if not self.builtin.enabled:
            return parsed
        events = {k: list(v) for k, v in parsed.events.items()}
        for event in AUTO_EVENTS:
            hooks = events.setdefault(event, [])
            present = any(
                isinstance(h, HookDefinition) and h.type == "builtin" and h.command == BUILTIN_NAME
                for h in hooks
            )
            if not present:
                hooks.append(HookDefinition(type="builtin", command=BUILTIN_NAME))
        return HooksConfig(events=events)


def register_snapshot(
    registry: Registry,
    enabled: bool = True,
    *,
    data_dir_path: str | os.PathLike[str] | None = None,
    max_new_file_size: int = DEFAULT_MAX_NEW_FILE_SIZE,
) -> SnapshotController:
    """Register the ``snapshot`` builtin on ``registry``; returns its controller."""
    builtin = SnapshotBuiltin(
        enabled=enabled, data_dir_path=data_dir_path, max_new_file_size=max_new_file_size
    )
    registry.register_builtin(BUILTIN_NAME, builtin)
    return SnapshotController(builtin)


def log_failure(data_dir: Path, message: str) -> None:
    """Into the data directory's hook.log (imported on failure only: it loads datetime)."""
    from snapshotter.logfile import append

    append(data_dir, message)
