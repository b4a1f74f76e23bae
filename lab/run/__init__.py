"""One run end to end: the runner, the run folder, the client workers, progress, and the
command that reproduces a run. The cluster a run uses comes from above (lab.compose)."""
