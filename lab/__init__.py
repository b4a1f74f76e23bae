"""The lab's core: specs, the runner, run folders, backends, the CLI."""

__version__ = "0.1.0"
