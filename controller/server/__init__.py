"""The daemon's trio shell: listener and connections, the group-commit writer, HTTP endpoints, metrics, capture, CLI."""
