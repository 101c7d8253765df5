"""The one exception type the harness turns into a one-line message and exit status 3."""


class HarnessError(Exception):
    """Bad input or an unmet precondition, explained in one line for the user."""
