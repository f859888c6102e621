"""Outages as coded 503 errors (:mod:`app.core.outages`): what the database engine's hook and the
one mapper make of real driver failures — SQLite out of pages, PostgreSQL not listening — and of
the ``OSError`` numbers of a full, over-quota or read-only volume."""

from __future__ import annotations

import errno
import socket

import pytest
from sqlalchemy import text

from cairn.app.core.db import Database
from cairn.app.core.errors import DatabaseUnavailable, StorageFull, outage_of, to_response


@pytest.mark.parametrize("number", [errno.ENOSPC, errno.EDQUOT, errno.EROFS])
def test_a_volume_that_takes_no_writes_is_storage_full_through_any_wrapping(number):
    try:
        try:
            raise OSError(number, "boom", "/secret/data/whoosh/seg.tmp")
        except OSError as inner:
            raise RuntimeError("index write failed") from inner
    except RuntimeError as exc:
        status, ext = to_response(exc)
    assert (status, ext["code"], ext["retryAfter"]) == (503, "STORAGE_FULL", 30)


def test_the_embedded_engines_text_errors_are_storage_full():
    err = outage_of(Exception("Service internal error: No space left on device (os error 28)"))
    assert isinstance(err, StorageFull)
    assert outage_of(Exception("some other failure")) is None


def test_a_refused_connection_is_the_databases_only_when_the_database_raised_it():
    refused = ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed")
    assert outage_of(refused) is None  # an embeddings endpoint refusing is not the database
    err = outage_of(refused, from_database=True)
    assert isinstance(err, DatabaseUnavailable) and err.extra["retryAfter"] == 2


async def test_sqlite_out_of_space_is_storage_full_and_the_next_write_succeeds(tmp_path):
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'full.db'}")
    try:
        async with db.session() as s:
            await s.execute(text("CREATE TABLE blobs (b BLOB)"))
        with pytest.raises(StorageFull) as caught:
            async with db.session() as s:
                # SQLITE_FULL without filling a disk: the database may not grow past its pages
                pages = (await s.execute(text("PRAGMA page_count"))).scalar_one()
                await s.execute(text(f"PRAGMA max_page_count = {pages + 2}"))
                await s.execute(text("INSERT INTO blobs VALUES (zeroblob(1000000))"))
        assert "database or disk is full" in caught.value.message
        assert to_response(caught.value)[0] == 503
        async with db.session() as s:  # no transaction or lock was left behind
            await s.execute(text("PRAGMA max_page_count = 1073741823"))
            await s.execute(text("INSERT INTO blobs VALUES (zeroblob(1000))"))
        async with db.session() as s:
            assert (await s.execute(text("SELECT count(*) FROM blobs"))).scalar_one() == 1
    finally:
        await db.dispose()


async def test_a_postgresql_that_is_not_listening_is_database_unavailable():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    db = Database(f"postgresql+asyncpg://postgres@127.0.0.1:{port}/postgres")
    try:
        with pytest.raises(DatabaseUnavailable) as caught:
            async with db.session() as s:
                await s.execute(text("SELECT 1"))
        status, ext = to_response(caught.value)
        assert (status, ext["code"], ext["retryAfter"]) == (503, "DATABASE_UNAVAILABLE", 2)
        assert str(port) not in caught.value.message  # no host or port to the client
    finally:
        await db.dispose()


async def test_a_sqlite_file_that_cannot_be_opened_is_database_unavailable(tmp_path):
    folder = tmp_path / "gone"
    db = Database(f"sqlite+aiosqlite:///{folder / 'cairn.db'}")  # makes the folder
    folder.rmdir()  # e.g. an unmounted volume: SQLite cannot open (or create) the file
    try:
        with pytest.raises(DatabaseUnavailable) as caught:
            async with db.session() as s:
                await s.execute(text("SELECT 1"))
        assert "unable to open database file" in caught.value.message
        assert str(tmp_path) not in caught.value.message
    finally:
        await db.dispose()
