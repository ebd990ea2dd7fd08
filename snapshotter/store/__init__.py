"""The shadow store of one worktree: capture it as trees, walk, watch, seed,
restore files, diff trees and compact what is stored."""
