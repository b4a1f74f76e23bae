"""The `lab` command (a composition root, beside the pytest plugin): `main` is in lab.cli.main;
each part registers its subcommands (runs, clusters, reports)."""
