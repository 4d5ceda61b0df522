"""Errors a user can cause. The CLI turns them into one line on stderr and exit code 2."""


class UserError(Exception):
    """Bad input: a flag, a file, a key. The message is the whole story; no traceback is shown."""

    exit_code = 2
