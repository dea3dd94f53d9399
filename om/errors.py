"""The one exception family of `om`.

Core modules raise these and never print or exit; `om.cli.main` is the single
place that turns them into a one-line stderr diagnostic and an exit code.
"""


class OmError(Exception):
    """A failure the user can act on; the message is one line."""

    exit_code = 1


class UsageError(OmError):
    """The command line itself is wrong (never exit 2: Codex reads 2 as "block")."""

    exit_code = 64


class InputError(OmError):
    """The JSON on stdin, or an argument value, is not acceptable."""

    exit_code = 65


class NotFound(OmError):
    """An ID, session or file that was named does not exist."""

    exit_code = 66


class Conflict(OmError):
    """The request contradicts the ledger's state (stale cursor, existing destination...)."""

    exit_code = 67


class NothingMatched(OmError):
    """A literal to forget occurs nowhere the command covers: nothing was changed."""

    exit_code = 68


class Unavailable(OmError):
    """Something om needs is missing or out of reach: git for `om sync`, a sync remote that does not answer.

    Nothing was changed that the next run would not complete."""

    exit_code = 69


class StoreError(OmError):
    """The store or a session database cannot be opened, read or written."""

    exit_code = 74


class UpdateAvailable(OmError):
    """`om self update --check` found a newer release (not a failure; exit 100)."""

    exit_code = 100
