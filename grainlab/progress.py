"""The one progress reporter: a callable told before each long step.

Lines go to stderr, only when stderr is a terminal or the run has already
taken a while (so quick runs and pipes stay quiet); `quiet` silences it.
"""
from __future__ import annotations

import sys
import time

SLOW_SECONDS = 3.0


class Progress:
    def __init__(self, enabled=None, quiet: bool = False):
        self.t0 = time.monotonic()
        self.tty = sys.stderr.isatty() if enabled is None else enabled
        self.quiet = quiet

    def __call__(self, message: str):
        elapsed = time.monotonic() - self.t0
        if not self.quiet and (self.tty or elapsed > SLOW_SECONDS):
            print(f"grainlab: [{elapsed:6.1f} s] {message} ...", file=sys.stderr, flush=True)
