"""Checkpoints over the store: their records, the recorder of agent lifecycle
events, undo/redo/reset, retention and the journal that makes restores atomic."""
