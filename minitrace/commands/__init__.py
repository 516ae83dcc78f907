"""CLI subcommands: each module here defines ``register(subparsers)`` and is found by name."""
