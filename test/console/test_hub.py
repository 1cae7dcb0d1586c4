"""A page's outbox in the console: what a page that stops reading can cost the console."""
from __future__ import annotations

import asyncio

from heracles_ros.console.hub import OUTBOX_LIMIT, Tab


def test_a_page_that_stops_reading_is_cut_off_with_its_queue_bounded() -> None:
    async def flood() -> tuple[int, list[object]]:
        tab = Tab(session="s")
        for index in range(OUTBOX_LIMIT):
            tab.send({"type": "robot", "n": index})
        before = tab.outbox.qsize()
        for index in range(5 * OUTBOX_LIMIT):  # a long walk's progress to a stalled browser
            tab.send({"type": "robot", "n": index})
        return before, [tab.outbox.get_nowait() for _ in range(tab.outbox.qsize())]

    before, left = asyncio.run(flood())
    assert before == OUTBOX_LIMIT  # up to the limit, every message waits for the page
    # Past it, what waited is dropped and the writer is told to end (it closes the socket; the page
    # reconnects and gets the whole map), and nothing more queues up.
    assert left == [None]
