"""The ``handoff`` command in a fresh process, for tests that judge what a user sees.

The process is forked from a warm one (``tests.forked``): the same entry point, streams,
environment and exit status as the installed script, without two seconds of imports.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests import forked

HANDOFF = Path(sys.executable).parent / "handoff"


def handoff(
    *args: str, data_dir: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the CLI with only the ``HANDOFF_*`` variables given here (none of the caller's).

    ``data_dir`` sets ``HANDOFF_DATA_DIR``; ``env`` adds or overrides variables.
    """
    variables = {k: v for k, v in os.environ.items() if not k.startswith("HANDOFF_")}
    if data_dir is not None:
        variables["HANDOFF_DATA_DIR"] = str(data_dir)
    variables.update(env or {})
    return forked.run(args, env=variables)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The error line of a command that failed as designed: one line, no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]
