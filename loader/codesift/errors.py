"""Typed user errors: the CLI prints their message and exits 1, never a traceback."""


class CodesiftError(Exception):
    """A problem the user can fix; the message says what and how."""


class ConnectionFailed(CodesiftError):
    pass


class MigrationError(CodesiftError):
    pass


class IndexingError(CodesiftError):
    pass
