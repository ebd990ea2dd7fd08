"""Hooks while other processes rewrite files: no hook fails, no event is lost (issue 13.5).

libgit2's streamed read failed with ``failed to read file into stream:
Invalid argument`` when a file shrank under it, and the whole capture, with
its event, was lost. Writer processes here truncate and rewrite files in
every worker's directory while the hooks run. The default run is small;
``pytest -m slow`` runs the issue's size: 16 writers, and 16 workers of 50
hooks each (800 hooks). Both with and without the resident hook server (whose
threads serve the worktree's hooks in parallel).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from builders import event, fast_and_full, run_hook, write

from snapshotter.engine import Engine
from snapshotter.logfile import log_path

# (writer processes, hook workers, hooks per worker: hooks // 2 pre/post pairs)
SIZES = fast_and_full((2, 3, 6), (16, 16, 50))

WRITER = r"""
import os, random, sys, time
root, me = sys.argv[1], int(sys.argv[2])
rng = random.Random(me)
names = [os.path.join(root, d, f"churn{me}.bin") for d in sorted(os.listdir(root))]
while not os.path.exists(os.path.join(root, "..", "stop-writers")):
    path = rng.choice(names)
    size = rng.randrange(1, 256 * 1024)
    with open(path, "wb") as f:  # truncated, then written in pieces: a reader sees it shrink
        for start in range(0, size, 65536):
            f.write(bytes([rng.randrange(256)]) * min(65536, size - start))
    time.sleep(0.005)  # rewriting all the time, yet leaving the hooks some CPU
"""


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("server", [False, True], ids=["in-process", "server"])
def test_parallel_hooks_while_files_are_rewritten(
    repo: Path,
    data_dir: Path,
    server: bool,
    size: tuple[int, int, int],
    request: pytest.FixtureRequest,
) -> None:
    if server:  # the hook server on (and stopped after), as users run the hooks
        request.getfixturevalue("server_socket")
    run_parallel_hooks(repo, data_dir, *size)


def run_parallel_hooks(
    repo: Path, data_dir: Path, writer_count: int, workers: int, per_worker: int
) -> None:
    work = repo / "work"
    for i in range(workers):
        write(repo, f"work/w{i}/keep.txt", "present from the start\n")
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(work), str(k)])
        for k in range(writer_count)
    ]
    failures: list[str] = []
    barrier = threading.Barrier(workers)

    def check(what: str, proc: subprocess.CompletedProcess[bytes]) -> None:
        if proc.returncode != 0 or proc.stderr:
            failures.append(f"{what}: exit {proc.returncode}, stderr {proc.stderr[-300:]!r}")

    def worker(i: int) -> None:
        barrier.wait()
        for rnd in range(per_worker // 2):
            tool = {"tool_name": "edit", "tool_use_id": f"w{i}-r{rnd}"}
            pre = event("pre_tool_use", work / f"w{i}", f"s{i}", **tool)
            check(f"pre w{i} r{rnd}", run_hook(pre, data_dir, timeout=600))
            write(repo, f"work/w{i}/out.txt", f"worker {i} round {rnd}\n")
            post = event("post_tool_use", work / f"w{i}", f"s{i}", **tool)
            check(f"post w{i} r{rnd}", run_hook(post, data_dir, timeout=600))

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(worker, range(workers)))
    finally:
        (repo / "stop-writers").write_text("")
        for proc in writers:
            proc.wait(timeout=60)

    hooks = workers * (per_worker // 2) * 2
    print(f"{hooks} hooks, {writer_count} writers: {len(failures)} failed")
    assert not failures, f"{len(failures)} of {hooks} hooks failed:\n" + "\n".join(failures[:10])
    assert not log_path(data_dir).exists(), f"hook.log: {log_path(data_dir).read_text()[:2000]}"
    engine = Engine.open(repo, data_dir_path=data_dir, create=False)
    assert engine is not None
    state = json.loads((engine.store.root / "state.json").read_bytes())
    recorded: set[str] = set()
    for cp in state["checkpoints"]:
        entry = engine.entry(cp["after"], f"work/w{cp['session_id'][1:]}/out.txt")
        if entry is not None:
            recorded.add(engine.store.blob(entry[1]).decode())
    expected = {f"worker {i} round {r}\n" for i in range(workers) for r in range(per_worker // 2)}
    lost = expected - recorded
    assert not lost, f"{len(lost)} events lost, e.g. {sorted(lost)[:5]}"
