"""`python -m codesift`: the CLI (what the git hooks run, with the loader's interpreter)."""

from .cli import main

main()
