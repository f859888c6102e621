"""``python -m app.cli``: the cairn command."""

import sys

from app.cli import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
