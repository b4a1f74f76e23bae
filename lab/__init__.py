"""The lab's core: specs, the runner, run folders, backends, the CLI."""

__version__ = "0.2.0"  # a release is tagged v<this> (docs/contributing.md)
