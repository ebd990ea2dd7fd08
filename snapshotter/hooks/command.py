"""``snapshotter hook``: one event as JSON on stdin, always exit 0 (SPEC §6).

In docker-agent a failing pre_tool_use hook blocks the tool call, so every
failure here — bad JSON, wrong types, a broken store — is logged to the data
directory's hook.log and swallowed. A failure of ours is said on stderr too;
bad input (not JSON, wrong types) only in hook.log: the hook prints nothing
for what a runtime sent (#26.6), and some runtimes show stderr to the user.
"""

from __future__ import annotations

import os
import sys

from snapshotter.hooks import client

TYPE_CHECKING = False  # typing costs the hook process milliseconds it need not pay
if TYPE_CHECKING:
    from pathlib import Path
    from typing import BinaryIO

    from snapshotter.engine.serving import Resident

MAX_INPUT_BYTES = 64 * 1024 * 1024


def run(stdin: BinaryIO | None, data_dir: str | os.PathLike[str] | None, args: list[str]) -> int:
    """Handle one event, through the resident server when one can be used.

    ``data_dir`` is the ``--data-dir`` option (None: the default one); ``stdin``
    is None when the runtime closed it. Returns 0 whatever happens (SPEC §6).
    """
    try:
        _run(_read_input(stdin), data_dir, args)
    except Exception as exc:  # the agent must never be blocked by us
        _say(f"snapshotter hook: {type(exc).__name__}: {exc}")
    return 0


def _say(message: str) -> None:
    """To stderr, if the runtime left us one (never to stdout, which is the reply)."""
    if sys.stderr is not None:
        print(message, file=sys.stderr)


def _read_input(stdin: BinaryIO | None) -> bytes:
    """The event's bytes; none at all from a closed or unreadable stdin (a logged no-op)."""
    if stdin is None:
        return b""
    try:
        return stdin.read(MAX_INPUT_BYTES + 1)
    except (OSError, ValueError):  # EBADF, a closed file object
        return b""


def _run(raw: bytes, data_dir: str | os.PathLike[str] | None, args: list[str]) -> None:
    project = os.environ.get("CLAUDE_PROJECT_DIR")
    if project:  # travels with the event: a shared hook server has its own environment
        args = [*args, f"project_dir={project}"]
    error = _via_server(raw, data_dir, args) if client.enabled() else _NOT_SERVED
    _HANDED_OVER[0] = error is not _NOT_SERVED
    if error is _NOT_SERVED:
        from snapshotter.config import data_dir as resolve

        error = run_request(raw, resolve(data_dir), args)
    if error and not error.startswith(_BAD_INPUT):
        _say(error)


_NOT_SERVED = "\0not served"
_BAD_INPUT = "snapshotter hook: BadInput:"  # how run_request's message for bad input starts


def _via_server(raw: bytes, data_dir: str | os.PathLike[str] | None, args: list[str]) -> str | None:
    path = client.socket_file(data_dir)
    if path is None:
        return _NOT_SERVED
    posted = _opens_session(raw, args)
    for attempt in range(_START_TRIES):
        try:
            if posted:
                client.post(path, data_dir, args, raw)
                return None  # the server takes the baseline; nothing here waits for it
            return client.send(path, data_dir, args, raw)
        except (ConnectionRefusedError, FileNotFoundError):
            pass  # no server: this hook starts one
        except OSError:
            return _NOT_SERVED  # no "ready" in time (it will not handle it), or it died
        error = _start(path, data_dir, args, raw, posted)
        if error is not _RETRY:
            return error
        if attempt + 1 < _START_TRIES:
            import time

            time.sleep(_START_RETRY_S)
    return _NOT_SERVED  # a server is starting or leaving: this event is handled here


def handed_over() -> bool:
    """Whether the last event ``run`` got went to a hook server (none was handled here)."""
    return _HANDED_OVER[0]


_HANDED_OVER = [False]
_NOT_SERVED = "\0not served"
_RETRY = "\0retry"
_BAD_INPUT = "snapshotter hook: BadInput:"  # how run_request's message for bad input starts
# Another process holds the server's lock but its socket took no connection: one
# about to bind it (microseconds), or one leaving. Tried again this often, then here.
_START_TRIES = 3
_START_RETRY_S = 0.02


def _start(
    path: str, data_dir: str | os.PathLike[str] | None, args: list[str], raw: bytes, posted: bool
) -> str | None:
    """Start the server on a socket this process binds; the event's outcome.

    A posted event (``session_start``) is queued on the socket before the server
    exists and this hook returns at once: the server takes the worktree's
    baseline while the user types. Any other event (a runtime that sends no
    ``session_start``) is handled here, while the server starts beside it: the
    tool it precedes must not run before its capture, and this process is
    already half-way through the imports a new server would need first.
    """
    try:
        owned = client.own(path)
    except OSError:
        return _NOT_SERVED
    if owned is None:
        return _RETRY
    listener, lock = owned
    try:
        if posted:
            client.post_first(path, data_dir, args, raw)
        client.start(path, owned)
    except OSError:
        return _NOT_SERVED  # nothing serves that socket: the next hook binds it again
    finally:
        listener.close()  # the server holds its own copies of both
        os.close(lock)
    return None if posted else _NOT_SERVED


_SESSION_START_NAMES = (b"SessionStart", b"sessionStart", b"session_start")


def _opens_session(raw: bytes, args: list[str]) -> bool:
    """Whether the event is a ``session_start`` (posted: no tool waits on it). Read
    only when its bytes or ``--arg event=`` could name one: JSON costs a hook ms."""
    said = b" ".join(a.encode("utf-8", "surrogateescape") for a in args)
    if not any(name in raw or name in said for name in _SESSION_START_NAMES):
        return False
    return peek(raw, args)[0] == "session_start"


def peek(raw: bytes, args: list[str]) -> tuple[str, str]:
    """(event, session id) in our names, of whatever runtime sent ``raw``; ("", "")
    for what is not an event (``run_request`` says why)."""
    import json

    from snapshotter.hooks.dialects import normalize

    try:
        data = json.loads(raw)
    except ValueError:
        return "", ""
    if not isinstance(data, dict):
        return "", ""
    data = normalize(data, _dialect_args(args))
    event, session = data.get("hook_event_name"), data.get("session_id")
    return (
        event if isinstance(event, str) else "",
        session if isinstance(session, str) else "",
    )


def run_request(
    raw: bytes, data_dir: Path, args: list[str], resident: Resident | None = None
) -> str | None:
    """Handle one event in this process; the error (already logged), or None.

    ``resident``: the hook server's warm state, for the captures it takes.
    """
    try:
        _handle(raw, data_dir, args, resident)
    except Exception as exc:  # the agent must never be blocked by us
        from snapshotter.logfile import append

        message = f"snapshotter hook: {type(exc).__name__}: {exc}"
        append(data_dir, message)
        return message
    return None


def _handle(raw: bytes, data_dir: Path, args: list[str], resident: Resident | None) -> None:
    import json

    from snapshotter.errors import BadInput

    if len(raw) > MAX_INPUT_BYTES:
        raise BadInput(f"hook input larger than {MAX_INPUT_BYTES} bytes; ignored")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise BadInput(f"hook input is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise BadInput("hook input must be a JSON object")
    from snapshotter.hooks.dialects import normalize
    from snapshotter.hooks.events import SNAPSHOT_EVENTS, Event

    sent, chosen = data, _dialect_args(args)
    data = normalize(data, chosen)  # any runtime's names as ours
    hook_input = Event.read(data)  # the fields the builtin reads, checked (BadInput)
    if hook_input.event not in SNAPSHOT_EVENTS:
        _unknown(data_dir, hook_input.event, sent)
        return  # before the builtin's imports: an event we ignore costs no more
    from snapshotter.hooks.builtin import SnapshotBuiltin
    from snapshotter.hooks.dialects import source_of

    source = source_of(sent, chosen)
    extra = [f"source={source}"] if source else []
    builtin = SnapshotBuiltin(data_dir_path=data_dir, resident=resident)
    builtin.record(hook_input, [*args, *extra])


def _dialect_args(args: list[str]) -> dict[str, str]:
    """``--arg dialect=NAME`` and ``--arg event=NAME`` (``init`` writes them where a
    runtime's payload does not say which runtime or event it is)."""
    found = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        if sep and key.strip() in ("dialect", "event"):
            found[key.strip()] = value.strip()
    return found


UNKNOWN_EVERY_S = 3600.0


def _unknown(data_dir: Path, event: str, data: dict[str, object]) -> None:
    """One ``hook.log`` line an hour per event shape snapshotter does not know
    (issue 22.4c): a runtime whose events are all unknown records nothing, silently."""
    from snapshotter.hooks.dialects import known_ignored

    if event in known_ignored():
        return
    import contextlib
    import json
    import time

    from snapshotter.config import stores_dir
    from snapshotter.fileio import write_atomic
    from snapshotter.logfile import append

    shape = event or "no hook_event_name, fields " + ", ".join(sorted(map(str, data))[:12])
    seen_file = stores_dir(data_dir) / "hook-unknown.json"  # shape → when last said
    try:
        seen = json.loads(seen_file.read_bytes())
    except (OSError, ValueError):
        seen = {}
    if not isinstance(seen, dict):
        seen = {}
    now = time.time()
    last = seen.get(shape)
    if isinstance(last, (int, float)) and now - last < UNKNOWN_EVERY_S:
        return
    seen = {k: v for k, v in seen.items() if isinstance(v, (int, float)) and now - v < 86400}
    seen[shape] = now
    what = f"event {event!r}" if event else f"an event with {shape}"
    append(data_dir, f"snapshotter hook: ignored {what}: not an event snapshotter knows")
    with contextlib.suppress(OSError):  # a read-only data dir: said every time, not never
        write_atomic(seen_file, json.dumps(seen).encode())  # (beside hook.log, made above)
