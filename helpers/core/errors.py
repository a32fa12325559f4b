"""The two errors a reader meets, each message naming the cause and the way out."""


class StageUnavailable(RuntimeError):
    """A stage cannot run here; the message names the cause and the way out."""


class TraceError(RuntimeError):
    """A recorded trace is missing or unreadable; the message says how to get a good one."""
