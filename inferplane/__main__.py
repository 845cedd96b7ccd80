"""`python -m inferplane`: the `inferplane` command, for an environment without the console script on PATH."""

from inferplane.cli.main import main

main()
