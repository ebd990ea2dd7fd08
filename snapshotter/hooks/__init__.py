"""The hook layer: agent lifecycle events in, engine calls out."""
