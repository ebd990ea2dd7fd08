"""Many `snapshotter hook` processes on one worktree at once, and a killed lock holder.

Every process loads, changes and saves the store's state under the store lock;
a lost update would show up as a missing checkpoint, a gap or a duplicate id,
or a pre_tool_use mark its post never found.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import filelock
import pytest
from builders import fast_and_full, load_state, run_hook, write

from snapshotter.engine import Engine
from snapshotter.logfile import log_path

# (processes at once, rounds); 8 x 3 with ``pytest -m slow``.
SIZES = fast_and_full((4, 2), (8, 3))
SESSIONS = ("sess-A", "sess-B")


@pytest.mark.parametrize("size", SIZES)
def test_parallel_hook_processes_lose_nothing(
    repo: Path, data_dir: Path, size: tuple[int, int]
) -> None:
    """N processes at once, some rounds, 2 sessions: every tool's change is its own checkpoint.

    Each worker's tool names the file it writes in its ``tool_input``: one
    worktree, one store, one lock and one state file, spans that all see each
    other's files, and yet attribution is exact (SPEC §4), so any lost update
    shows. (A file no tool named would go to whichever span recorded it first.)
    """
    workers, rounds = size
    engine = Engine.open(repo, data_dir_path=data_dir)
    assert engine is not None
    for i in range(workers):
        write(repo, f"work/w{i}/keep.txt", "tracked by nobody, present from the start\n")
    failures: list[str] = []
    barrier = threading.Barrier(workers)

    def check(what: str, proc: subprocess.CompletedProcess[bytes]) -> None:
        if proc.returncode != 0 or proc.stderr:
            failures.append(f"{what}: exit {proc.returncode}, stderr {proc.stderr[-500:]!r}")

    def worker(rnd: int, i: int) -> None:
        base = {
            "session_id": SESSIONS[i % 2],
            "cwd": str(repo),
            "tool_name": f"edit_w{i}",
            "tool_use_id": f"r{rnd}-w{i}",
            "tool_input": {"path": f"work/w{i}/out.txt"},
        }
        barrier.wait()  # all pre_tool_use processes start together
        check(f"pre r{rnd} w{i}", run_hook({**base, "hook_event_name": "pre_tool_use"}, data_dir))
        write(repo, f"work/w{i}/out.txt", f"round {rnd} worker {i}\n")
        check(f"post r{rnd} w{i}", run_hook({**base, "hook_event_name": "post_tool_use"}, data_dir))

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for rnd in range(rounds):
            list(pool.map(lambda i, r=rnd: worker(r, i), range(workers)))

    assert not failures, "hook processes failed:\n" + "\n".join(failures)
    assert not log_path(data_dir).exists(), f"hook.log: {log_path(data_dir).read_text()}"
    state = load_state(data_dir)
    cps = state["checkpoints"]
    ids = [cp["id"] for cp in cps]
    assert ids == list(range(1, len(ids) + 1)), f"checkpoint ids not unique and contiguous: {ids}"
    assert state["next_id"] == len(ids) + 1, f"next_id {state['next_id']} after {len(ids)} ids"
    for name, sess in state["sessions"].items():
        assert sess["tools"] == [], f"{name}: pre_tool_use marks never paired: {sess['tools']}"

    seen: dict[tuple[int, int], int] = {}
    for cp in cps:
        i = int(cp["tool_name"].removeprefix("edit_w"))
        assert cp["kind"] == "tool" and cp["parent"] is None, f"unexpected checkpoint {cp}"
        assert cp["session_id"] == SESSIONS[i % 2], f"worker {i}'s change in the wrong session"
        assert cp["files"] == [
            {
                "path": f"work/w{i}/out.txt",
                "status": "added" if not any(k[1] == i for k in seen) else "modified",
            }
        ], f"worker {i}: files {cp['files']}"
        entry = engine.entry(cp["after"], f"work/w{i}/out.txt")
        assert entry is not None, f"checkpoint {cp['id']}: out.txt missing from its after tree"
        content = engine.store.blob(entry[1]).decode()
        rnd = int(content.split()[1])
        assert (rnd, i) not in seen, f"round {rnd} worker {i} recorded twice"
        seen[(rnd, i)] = cp["id"]
    missing = {(r, i) for r in range(rounds) for i in range(workers)} - set(seen)
    assert not missing, f"tools whose change was never recorded (round, worker): {missing}"

    # The shared manifest survived the parallel captures: a full capture sees each file as is.
    final = engine.capture().tree
    for i in range(workers):
        for name, content in (
            ("keep.txt", "tracked by nobody, present from the start\n"),
            ("out.txt", f"round {rounds - 1} worker {i}\n"),
        ):
            entry = engine.entry(final, f"work/w{i}/{name}")
            assert entry is not None and engine.store.blob(entry[1]) == content.encode(), (
                f"work/w{i}/{name} wrong in a full capture after the run"
            )


LOCK_HOLDER = """
import sys, time
from snapshotter.engine import Engine
engine = Engine.open(sys.argv[1], data_dir_path=sys.argv[2])
lock = engine.store.locked()
lock.acquire()
(engine.store.root / "index.lock").write_text("left by a killed process")
print(engine.store.root, flush=True)
time.sleep(600)
"""


def test_a_killed_lock_holder_does_not_block_the_next_event(repo: Path, data_dir: Path) -> None:
    common = {"session_id": "s", "cwd": str(repo), "tool_name": "shell", "tool_use_id": "t1"}
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(repo), str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stderr is not None
        store_root = Path(holder.stdout.readline().decode().strip())
        assert store_root.is_dir(), f"the lock holder did not start: {holder.stderr.read()!r}"
        with pytest.raises(filelock.Timeout):
            filelock.FileLock(str(store_root / "lock"), timeout=0).acquire()
        holder.kill()  # SIGKILL: no cleanup, no unlock
        holder.wait(timeout=60)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert (store_root / "lock").exists(), "the killed holder's lock file is still there"

    pre = run_hook({**common, "hook_event_name": "pre_tool_use"}, data_dir)
    write(repo, "after-kill.txt", "recorded\n")
    post = run_hook({**common, "hook_event_name": "post_tool_use"}, data_dir)
    for name, proc in (("pre", pre), ("post", post)):
        assert proc.returncode == 0 and not proc.stderr, f"{name}: {proc.stderr!r}"
    cps = load_state(data_dir)["checkpoints"]
    assert [[f["path"] for f in cp["files"]] for cp in cps] == [["after-kill.txt"]], (
        f"the event after a SIGKILLed lock holder must record: {cps}"
    )
    assert not log_path(data_dir).exists(), f"failures: {log_path(data_dir).read_text()}"
