"""Infrastructure every capability uses: settings, database and migrations, SQL tables, errors, ids and clocks, logging, the embedded data dir.

Open package: its modules (``app.core.errors``, ``app.core.models`` …) are its public surface; it imports no other ``app`` package."""
