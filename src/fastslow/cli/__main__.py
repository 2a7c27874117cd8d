"""``python -m fastslow.cli``: the same entry point as the ``fastslow`` script."""

from fastslow.cli import main

main()
