"""Socket-type strategies tested with fake peers (a package: its basenames repeat at tests/)."""
