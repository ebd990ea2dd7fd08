"""Git's formats and pygit2: the only layer that knows either.

Object ids, varints, loose objects, trees, packs and their indexes, the
source repository's index, pattern files, ignore rules, attributes and content
conversion, and finding a worktree with its configuration.
"""
