"""What a long-lived process (the hook server) holds across events, through the engine.

The server keeps one ``Resident`` (store/resident.py: watchers, stat caches,
the forwarding of a forked command's captures) and hands it to every engine it
opens; ``serve_capture`` answers a capture a forked command forwarded;
``warm_up`` imports what an event needs before the first one arrives. Only
the server imports this module, so a hook handled on its own loads none of it.
"""

from __future__ import annotations

from snapshotter.store import remote
from snapshotter.store.resident import Resident

__all__ = ["Resident", "serve_capture", "warm_up"]


def serve_capture(body: bytes, resident: Resident) -> bytes:
    """The answer to a forwarded capture request ``body`` (store/remote.py's format)."""
    return remote.serve(body, resident)


def warm_up() -> None:
    """Import everything recording an event needs (issue 24.3: the first event waits
    for this). Not pygit2: a capture that finds nothing changed reads no object, and
    the session's first baseline is usually one; ``load_commands`` loads it later."""
    import snapshotter.history.recorder  # noqa: F401
