"""``python -m app.cli``: the ``handoff`` command."""

from app.cli import main

main()
