"""Writes to the passage index: one Whoosh commit that adds, replaces or deletes passages,
cancelled if anything fails — also the commit itself (:func:`commit`): Whoosh releases its
write lock only when a commit succeeds, so a commit that hit a full disk left the lock held and
refused every later write until a restart (issue 32). :class:`retrieval.lexical.whoosh_index.WhooshIndex`
holds its own write lock around each and swaps in a new searcher after it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from cairn.retrieval.lexical.schema import IndexedPassage, passage_fields


def commit_passages(
    index: Any,
    passages: Iterable[IndexedPassage],
    *,
    replace: bool,
    title_in_body: bool,
    procs: int,
    limitmb: int,
) -> None:
    """Write passages in passage-id order, in one commit.

    Args:
        index: The Whoosh index.
        passages: Passages, one per ``passage_id``.
        replace: Replace the document of the same ``passage_id`` (``update_document``);
            False only adds (``add_document``: no lookup, for an empty index).
        title_in_body: See :func:`retrieval.lexical.schema.passage_fields`.
        procs: Writer processes; > 1 uses Whoosh's ``MpWriter`` (forks; one segment per
            process).
        limitmb: Writer memory per process before spilling a segment, in MB.
    """
    if procs > 1:
        writer = index.writer(procs=procs, limitmb=limitmb, multisegment=True)
    else:
        writer = index.writer(limitmb=limitmb)
    try:
        for passage in sorted(passages, key=lambda p: p.passage_id):
            fields = passage_fields(passage, title_in_body=title_in_body)
            if replace:
                writer.update_document(**fields)
            else:
                writer.add_document(**fields)
    except BaseException:
        writer.cancel()
        raise
    commit(writer)


def commit_deletions(index: Any, passage_ids: Iterable[str], *, limitmb: int) -> None:
    """Delete passages by id (unknown ids are ignored), in sorted id order, in one commit.

    Args:
        index: The Whoosh index.
        passage_ids: Ids to delete (duplicates are deleted once).
        limitmb: Writer memory before spilling a segment, in MB.
    """
    writer = index.writer(limitmb=limitmb)
    try:
        for passage_id in sorted(set(passage_ids)):
            writer.delete_by_term("passage_id", passage_id)
    except BaseException:
        writer.cancel()
        raise
    commit(writer)


def commit(writer: Any, **options: Any) -> None:
    """``writer.commit(**options)``; when it raises (e.g. ``ENOSPC`` writing a segment or the
    table of contents), the writer is cancelled so the index's write lock is released and the
    next write can succeed once space returns, then the error is raised.

    Args:
        writer: A Whoosh ``SegmentWriter`` or ``MpWriter``.
        options: Passed to ``commit`` (e.g. ``mergetype``).
    """
    try:
        writer.commit(**options)
    except BaseException:
        try:
            writer.cancel()  # removes the new segment's files and releases the lock
        except Exception:  # noqa: BLE001 - the commit's error is the one to report
            with contextlib.suppress(Exception):
                writer.writelock.release()  # cancel failed part-way: at least free the lock
        raise
