"""Backup and restore of the embedded store: one ``.tar.gz`` holding a consistent copy of the
SQLite database and a manifest.

What is in it: ``cairn.db``, copied with SQLite's online backup API (one step, so the copy is
one consistent snapshot even while ``cairn serve`` writes: WAL readers do not block the
writer, and the writer does not disturb a reader's snapshot), checked with ``PRAGMA
integrity_check``, and ``manifest.json`` (format, schema revision, counts, the database's
size and SHA-256). What is not: the Whoosh and Qdrant folders and their change-log cursor.
They are derived from SQL (passages, and since revision 0014 the passages' embeddings), so a
restore rebuilds them (``cairn restore`` does it before it returns); copying them would need
the serving process to stop writing, and a copy of a memory-mapped Qdrant shard taken while
it writes can be torn. PostgreSQL stores are backed up with ``pg_dump`` instead (docs/operations.md).

Restoring reads only the two known members, streams the database out of the archive, checks
its size, hash and integrity, and never writes outside the target folder.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

FORMAT = "cairn-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
DATABASE = "cairn.db"
CHUNK = 1 << 20
"""Bytes per read when hashing or extracting (1 MiB)."""

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: stage ``copy`` (pages), ``compress`` / ``extract`` (bytes)."""


class BackupError(Exception):
    """A backup or restore refused or failed; ``message`` is one line for the operator."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


@dataclass(frozen=True)
class BackupManifest:
    """What a backup holds (``manifest.json``, camelCase keys).

    Attributes:
        format / version: :data:`FORMAT` and :data:`FORMAT_VERSION`.
        created_at: UTC time of the snapshot, ISO 8601.
        revision: The database's Alembic revision (restore migrates a backup of an older one).
        documents / passages: Row counts of the snapshot (live documents, all passages).
        database_bytes / database_sha256: Size and SHA-256 of ``cairn.db`` in the archive.
    """

    format: str
    version: int
    created_at: str
    revision: str
    documents: int
    passages: int
    database_bytes: int
    database_sha256: str

    def to_json(self) -> dict:
        """The manifest as written (camelCase keys)."""
        return {_camel(k): v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: object) -> BackupManifest:
        """Read a manifest; BackupError when it is not one of this format and version."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise BackupError(f"not a Cairn backup: {MANIFEST} does not say format {FORMAT!r}")
        if data.get("version") != FORMAT_VERSION:
            raise BackupError(
                f"backup format version {data.get('version')!r} is not {FORMAT_VERSION}: restore it with the Cairn "
                "that made it"
            )
        try:
            return cls(**{k: data[_camel(k)] for k in cls.__dataclass_fields__})
        except KeyError as exc:
            raise BackupError(f"not a Cairn backup: {MANIFEST} lacks {exc.args[0]!r}") from None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _facts(path: Path) -> tuple[str, int, int]:
    """``(revision, documents, passages)`` of a database file, after ``PRAGMA integrity_check``.

    Raises:
        BackupError: the file is not a sound Cairn database.
    """
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            check = con.execute("PRAGMA integrity_check").fetchall()
            if check != [("ok",)]:
                raise BackupError(f"the database copy fails SQLite's integrity check: {check[0][0]}")
            revision = con.execute("SELECT version_num FROM alembic_version").fetchone()
            documents = con.execute("SELECT count(*) FROM document WHERE deleted_at IS NULL").fetchone()[0]
            passages = con.execute("SELECT count(*) FROM passage").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise BackupError(f"not a Cairn database ({type(exc).__name__}: {exc})") from None
    if revision is None:
        raise BackupError("not a Cairn database (no schema revision)")
    return str(revision[0]), int(documents), int(passages)


def check_target(database: Path, archive: Path) -> None:
    """Refuse a backup before any work: ``archive`` exists or its folder does not, or there is
    no ``database`` file (BackupError, one line)."""
    if archive.exists():
        raise BackupError(f"{archive} exists: give a new file name (a backup never overwrites)")
    if not archive.parent.is_dir():
        raise BackupError(f"folder {archive.parent} does not exist")
    if not database.is_file():
        raise BackupError(f"no database at {database}")


def create_backup(database: Path, archive: Path, *, progress: Progress | None = None) -> BackupManifest:
    """Write a backup of the SQLite ``database`` to the new file ``archive`` (module doc).

    Safe beside a running server: the copy is one snapshot taken with SQLite's backup API in
    one step (it waits up to 60 s for a writer's lock). The archive is written under a
    temporary name and renamed when complete, so a failed backup leaves no partial file.

    Args:
        database: The ``cairn.db`` file.
        archive: The ``.tar.gz`` to write; must not exist.
        progress: ``(stage, done, total)`` callback.

    Returns:
        The manifest written into the archive.

    Raises:
        BackupError: ``archive`` exists or its folder does not, the database is missing or
            not sound.
    """
    database, archive = Path(database), Path(archive)
    check_target(database, archive)
    with tempfile.TemporaryDirectory(prefix=".cairn-backup-", dir=archive.parent) as tmp:
        copy = Path(tmp) / DATABASE
        source = sqlite3.connect(database, timeout=60)
        target = sqlite3.connect(copy)
        try:
            pages = source.execute("PRAGMA page_count").fetchone()[0]
            if progress:
                progress("copy", 0, pages)
            source.backup(target)  # pages=-1: the whole database in one step, one consistent snapshot
            target.execute("PRAGMA journal_mode=DELETE")  # a single self-contained file, no -wal beside it
            if progress:
                progress("copy", pages, pages)
        finally:
            target.close()
            source.close()
        revision, documents, passages = _facts(copy)
        manifest = BackupManifest(
            format=FORMAT,
            version=FORMAT_VERSION,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            revision=revision,
            documents=documents,
            passages=passages,
            database_bytes=copy.stat().st_size,
            database_sha256=_sha256(copy),
        )
        partial = Path(tmp) / "backup.tar.gz"
        body = json.dumps(manifest.to_json(), indent=2).encode("utf-8")
        with tarfile.open(partial, "w:gz") as tar:
            info = tarfile.TarInfo(MANIFEST)
            info.size, info.mtime, info.mode = len(body), int(datetime.now(UTC).timestamp()), 0o644
            tar.addfile(info, io.BytesIO(body))
            info = tar.gettarinfo(str(copy), arcname=DATABASE)
            info.mode = 0o644
            with copy.open("rb") as f:
                tar.addfile(info, _Counting(f, manifest.database_bytes, "compress", progress))
        os.replace(partial, archive)
    return manifest


class _Counting(io.RawIOBase):
    """A read-only stream reporting ``progress(stage, bytes read, total)``."""

    def __init__(self, raw: BinaryIO, total: int, stage: str, progress: Progress | None) -> None:
        self._raw, self._total, self._stage, self._progress, self._done = raw, total, stage, progress, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self._done += len(data)
        if self._progress:
            self._progress(self._stage, self._done, self._total)
        return data


def read_manifest(tar: tarfile.TarFile) -> BackupManifest:
    """The manifest of an open backup archive; BackupError when the archive is not a backup
    (other or missing members, a link or folder, an unreadable manifest)."""
    members = tar.getmembers()
    names = sorted(m.name for m in members)
    if names != sorted([MANIFEST, DATABASE]) or not all(m.isfile() for m in members):
        raise BackupError(f"not a Cairn backup: it holds {names}, expected {MANIFEST} and {DATABASE} only")
    raw = tar.extractfile(MANIFEST)
    try:
        data = json.loads(raw.read().decode("utf-8")) if raw is not None else None
    except (UnicodeDecodeError, ValueError) as exc:
        raise BackupError(f"not a Cairn backup: {MANIFEST} is not JSON ({exc})") from None
    return BackupManifest.from_json(data)


def check_archive(archive: Path) -> BackupManifest:
    """The manifest of the backup ``archive`` after reading it through once (its members and
    the gzip stream's end), before anything is written: BackupError when it is not a readable
    Cairn backup, naming a path that does not exist or is not a file as such (a truncated file
    fails here; a changed byte fails the SHA-256 check of :func:`extract_database`)."""
    if not archive.is_file():  # say what is wrong with the path, not "damaged"
        raise BackupError(f"{archive} does not exist" if not archive.exists() else f"{archive} is not a file")
    try:
        with tarfile.open(archive, "r:gz") as tar:
            return read_manifest(tar)
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise BackupError(f"{archive} is damaged or not a .tar.gz ({type(exc).__name__}: {exc})") from None


def extract_database(archive: Path, database: Path, *, progress: Progress | None = None) -> BackupManifest:
    """Write the database of the backup ``archive`` to the new file ``database`` and check it.

    Args:
        archive: A file made by :func:`create_backup`.
        database: Where to write ``cairn.db`` (must not exist; its folder must).
        progress: ``(stage, done, total)`` callback (stage ``extract``, bytes).

    Returns:
        The backup's manifest.

    Raises:
        BackupError: not a readable backup, a size or SHA-256 other than the manifest's, a
            database failing the integrity check, or ``database`` exists.
    """
    archive, database = Path(archive), Path(database)
    if database.exists():
        raise BackupError(f"{database} exists: restore into an empty data dir")
    try:
        tar = tarfile.open(archive, "r:gz")  # noqa: SIM115 - closed by the `with` below; opening errors differ
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise BackupError(f"cannot read {archive} as a .tar.gz ({type(exc).__name__}: {exc})") from None
    try:
        with tar:
            manifest = read_manifest(tar)
            source = tar.extractfile(DATABASE)
            if source is None:  # read_manifest checked it is a regular file
                raise BackupError(f"not a Cairn backup: {DATABASE} is not a file")
            digest, size = hashlib.sha256(), 0
            with database.open("xb") as out:
                while chunk := source.read(CHUNK):
                    out.write(chunk)
                    digest.update(chunk)
                    size += len(chunk)
                    if progress:
                        progress("extract", size, manifest.database_bytes)
    except (OSError, tarfile.TarError, EOFError) as exc:
        database.unlink(missing_ok=True)
        raise BackupError(f"{archive} is damaged ({type(exc).__name__}: {exc})") from None
    except BackupError:
        database.unlink(missing_ok=True)
        raise
    if size != manifest.database_bytes or digest.hexdigest() != manifest.database_sha256:
        database.unlink()
        raise BackupError(f"{archive} is damaged: its database differs from the manifest's size and SHA-256")
    try:
        _facts(database)
    except BackupError:
        database.unlink()
        raise
    return manifest


def empty_target(folder: Path) -> None:
    """Refuse a restore target that holds anything (a restore never merges into a store).

    Raises:
        BackupError: ``folder`` is a file, or a folder with entries.
    """
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise BackupError(f"{folder} is not empty: restore into a new or empty data dir")


def clear_folder(folder: Path, *, remove: bool) -> None:
    """Undo a failed restore: delete what it wrote in ``folder`` (and ``folder`` when it made it)."""
    folder = Path(folder)
    if not folder.is_dir():
        return
    if remove:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for item in folder.iterdir():
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item, ignore_errors=True)
        else:
            item.unlink(missing_ok=True)
