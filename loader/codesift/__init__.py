"""codesift's loader, command line and MCP server (the code that runs inside PostgreSQL is
the package codesift_db)."""


def version() -> str:
    """The installed package's version (`codesift --version`, the MCP server's serverInfo)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("codesift")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"
