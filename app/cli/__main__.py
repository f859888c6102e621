"""``python -m cairn.app.cli``: the cairn command."""

import sys

from cairn.app.cli import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
