"""gc: retention over the records, then compaction of what stays live.

Retention (retention.py) decides which checkpoints and sessions go; the
records are saved before the objects they named are compacted away
(store/compaction.py). session_end starts a bounded gc as a process of its
own (hooks/detached_gc.py) and never waits for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from snapshotter.errors import StoreError
from snapshotter.history import sessions
from snapshotter.history.records import State
from snapshotter.history.retention import (
    Dropped,
    Policy,
    apply_age_and_count,
    drop_session,
    oldest_droppable,
    would_drop,
)
from snapshotter.history.state_file import load, save
from snapshotter.store import compaction, object_files, object_links, orphan_stores, stat_cache
from snapshotter.store.compaction import Compaction
from snapshotter.store.shadow import Store
from snapshotter.store.workspace import Workspace


@dataclass
class GcReport(Compaction):
    """A compaction, and the checkpoints and sessions retention dropped before it."""

    dropped: Dropped = field(default_factory=Dropped)


def collect(
    workspace: Workspace,
    *,
    budget_s: float | None = None,
    dry_run: bool = False,
    policy: Policy | None = None,
    compact: bool = False,
) -> GcReport:
    """Apply retention, pack what is new, drop the rest; bounded by ``budget_s``.

    ``compact``: rewrite every pack holding an unreachable object, however few.
    """
    return collect_store(
        workspace.store, budget_s=budget_s, dry_run=dry_run, policy=policy, compact=compact
    )


def collect_store(
    store: Store,
    *,
    budget_s: float | None = None,
    dry_run: bool = False,
    policy: Policy | None = None,
    compact: bool = False,
) -> GcReport:
    """``collect`` for a store (every store, for ``gc --all``)."""
    policy = policy or Policy()
    try:
        if dry_run:  # changes nothing, so it needs no turn (and leaves no lock file)
            return _collect(store, budget_s, dry_run, policy, compact)
        with compaction.only_gc(store, wait=budget_s is None) as mine:
            if not mine:
                return GcReport(str(store.root), reason="another gc is running on this store")
            return _collect(store, budget_s, dry_run, policy, compact)
    except OSError as exc:  # a permission, disk or lock failure: one clear error, not a crash
        raise StoreError(f"gc stopped: {exc}") from exc


def _collect(
    store: Store, budget_s: float | None, dry_run: bool, policy: Policy, compact: bool
) -> GcReport:
    objects = store.root / "git" / "objects"
    if not dry_run:
        _share_again(store)
    with store.locked():  # a short hold: read, apply retention, write the records
        object_files.remove_orphans(objects)
        if not dry_run:
            object_files.remove_stale_work(store.root)
        state = load(store)
        report = GcReport(str(store.root), bytes_before=object_files.size(objects))
        report.dropped = apply_age_and_count(state, policy)
        if report.dropped.checkpoints and not dry_run:
            save(store, state)  # records go before the objects they named
        plan = compaction.read_plan(store, _live_trees(store, state))
    over = _over_budget(state, policy, lambda: report.bytes_before)
    share = 0.0 if over or compact else compaction.GARBAGE_SHARE
    if budget_s is not None and not (over or compact or report.dropped.checkpoints):
        report.reason = compaction.idle_reason(plan)
        if report.reason:
            report.bytes_after = report.bytes_before
            return report
    if dry_run:
        compaction.estimate(store, plan, share, report)
        report.reason = "dry run: nothing changed"
        return report

    def live() -> set[str]:
        return _live_trees(store, load(store))

    deadline = None if budget_s is None else time.monotonic() + budget_s
    compaction.compact_pass(store, report, share, live, plan)
    while (
        policy.max_store_bytes is not None
        and report.bytes_after > policy.max_store_bytes
        and (deadline is None or time.monotonic() < deadline)
    ):
        with store.locked():
            state = load(store)
            victim = oldest_droppable(state)
            if victim is not None:
                drop_session(state, victim, report.dropped)
                save(store, state)
        if victim is None:
            report.reason = "over the size budget, but only the newest session is left"
            break
        compaction.compact_pass(store, report, 0.0, live)
    return report


def due(store: Store, policy: Policy) -> bool:
    """Whether a bounded gc (session_end's) would do anything to ``store``: retention
    drops something, the store is over its size budget, or compaction is due
    (``compaction.due``). It reads the records and lists the object directories,
    without the lock; a gc started on a "yes" decides again under it. Own loose
    objects the source has packed since are shared again by the next gc that runs:
    once the source's gc took its names from them, they are the store's own and
    soon enough (``packs.LOOSE_PACK_AT``) to make one due."""
    state = load(store)
    if would_drop(state, policy):
        return True
    objects = store.root / "git" / "objects"
    if compaction.due(objects):
        return True
    return _over_budget(state, policy, lambda: object_files.size(objects))


def _over_budget(state: State, policy: Policy, measured: Callable[[], int]) -> bool:
    """Over ``policy.max_store_bytes`` with a session left to drop (else rewriting frees
    nothing more); the store's size, ``measured``, is only read when that could matter."""
    limit = policy.max_store_bytes
    return limit is not None and oldest_droppable(state) is not None and measured() > limit


def _share_again(store: Store) -> None:
    """Own loose objects the source repository has packed since: its pack is linked,
    and our copies go once that is durable (object_links.shared_again)."""
    if store.worktree.object_format != "sha1":
        return  # a SHA-256 repository's objects are not our SHA-1 store's
    objects = store.root / "git" / "objects"
    copies = object_links.shared_again(store.worktree.common_dir / "objects", objects)
    if copies:
        with store.locked():
            object_files.settle_records(store.root)
            object_files.drop_loose(copies)
        store.reopen()


def _live_trees(store: Store, state: State) -> set[str]:
    trees = state.live_trees()
    cached = stat_cache.load(store.root / "manifest").tree
    if cached:
        trees.add(cached)  # the stat cache reuses its blobs without re-reading files
    return trees


def drop_orphans(data_dir: Path, max_age_days: float, *, dry_run: bool = False) -> list[Path]:
    """Stores whose worktree is gone, idle ``max_age_days`` (orphan_stores.drop_orphan_stores),
    and the session records idle as long."""
    dropped = orphan_stores.drop_orphan_stores(data_dir, max_age_days, dry_run=dry_run)
    if not dry_run:  # where each session works: idle records go with the same age
        sessions.forget_older_than(data_dir, max_age_days * 86400, time.time())
    return dropped
