"""Helpers shared by the consumption scripts: checks that exit non-zero with
the reason, and a handler-side recorder of what each consumer received."""

import sys


def check(condition, message):
    if not condition:
        print(f"FAILED: {message}", file=sys.stderr)
        sys.exit(1)


def as_list(messages):
    """consume() hands a handler one message or a list of them."""
    return messages if isinstance(messages, list) else [messages]
