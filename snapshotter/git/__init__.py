"""Git's formats and pygit2: the only layer that knows either.

Object ids, trees, packs, the source repository's index, ignore rules,
attributes, and finding a worktree with its configuration.
"""
