"""``python -m cairn.app.cli``: the cairn command."""

from cairn.app.cli import main

if __name__ == "__main__":  # pragma: no cover
    main()
