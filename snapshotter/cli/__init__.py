"""The ``snapshotter`` command: parses, calls the engine, prints."""
