"""grainlab's error types.

Every problem caused by the user's input (a file, a command line, a program to
record) is raised as a GrainlabError subclass whose message is one line that
names the thing and the problem. `grainlab.cli.main` prints it as
`grainlab: <message>` and exits 2; a traceback means a bug in grainlab.
"""


class GrainlabError(Exception):
    """Base of every user-facing grainlab error (one-line message)."""

    def __init__(self, message: str):
        # Keep messages to one line whatever the underlying library said.
        super().__init__(" ".join(str(message).split()))


class TraceError(GrainlabError):
    """A trace file is missing, unreadable, foreign, too new or inconsistent."""


class RecordError(GrainlabError):
    """`grainlab record` cannot run the program with the collector."""


class UsageError(GrainlabError):
    """A command-line argument is invalid."""


class BuildArtifactMissing(GrainlabError):
    """A native part of grainlab (collector library, example) has not been built."""


def first_line(e: Exception) -> str:
    """The first line of what a library said, for a one-line message."""
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]
