"""Making a source repository: what the demo and fixtures need, with no git binary."""

from __future__ import annotations

from pathlib import Path


def commit_all(root: Path, message: str, *, name: str, email: str, branch: str = "main") -> str:
    """Make ``root`` a repository (if it is not one) and commit every file in it
    that its ignore rules keep; the commit's hex id."""
    import pygit2

    if (root / ".git").exists():
        repo = pygit2.Repository(str(root))
    else:
        repo = pygit2.init_repository(str(root), initial_head=branch)
    index = repo.index
    index.add_all()
    index.write()
    tree = index.write_tree()
    who = pygit2.Signature(name, email)
    parents = [] if repo.head_is_unborn else [repo.head.target]
    return str(repo.create_commit("HEAD", who, who, message, tree, parents))
