"""Runtime services: settings, stores, agents, the Python API and the CLI."""
