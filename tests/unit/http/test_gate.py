"""Request bodies: size limit while reading, and a deadline for stalled uploads."""

from __future__ import annotations

import asyncio

import pytest

from cairn.app.core.errors import CairnError
from cairn.app.http.gate import BodyTooLarge, read_body


def receiver(chunks: list[bytes], stall: bool = False):
    """An ASGI receive callable delivering ``chunks`` then (if ``stall``) never the rest."""
    queue = list(chunks)

    async def receive():
        if queue:
            body = queue.pop(0)
            return {"type": "http.request", "body": body, "more_body": bool(queue) or stall}
        await asyncio.Event().wait()  # the client stopped sending

    return receive


async def test_a_complete_body_is_joined():
    assert await read_body(receiver([b'{"a":', b"1}"]), 100) == b'{"a":1}'


async def test_a_body_over_the_limit_is_refused_while_reading():
    with pytest.raises(BodyTooLarge):
        await read_body(receiver([b"x" * 60, b"x" * 60]), 100)


async def test_a_stalled_body_times_out_with_408():
    with pytest.raises(CairnError) as e:
        await read_body(receiver([b'{"que'], stall=True), 100, timeout=0.05)
    assert e.value.code == "REQUEST_TIMEOUT" and e.value.http_status == 408
