"""A page's outbox in the console: what a page that stops reading can cost the console, and what a reading one gets."""
from __future__ import annotations

import asyncio
import json

from heracles_ros.console import hub
from heracles_ros.console.hub import OUTBOX_BYTES, OUTBOX_MESSAGES, Tab


def drained(tab: Tab) -> list[str | None]:
    """What the writer would take, up to the end or until nothing waits."""
    async def take() -> list[str | None]:
        taken: list[str | None] = []
        while True:
            try:
                text = await asyncio.wait_for(tab.next(), 0.05)
            except TimeoutError:
                return taken
            taken.append(text)
            if text is None:
                return taken
    return asyncio.run(take())


def test_a_reading_page_gets_every_message_in_order_as_ascii_json() -> None:
    tab = Tab(session="s")
    tab.send({"type": "robot", "n": 1, "name": "caf\u00e9 \ud800"})  # a lone surrogate from anywhere: escaped
    tab.send_text('{"type":"status"}')
    first, second = drained(tab)
    assert first is not None and first.isascii() and json.loads(first)["name"] == "caf\u00e9 \ud800"
    assert second == '{"type":"status"}' and tab.waiting_bytes == 0 and not tab.ended


def test_a_page_that_stops_reading_is_cut_off_at_the_message_bound_with_its_reason() -> None:
    tab = Tab(session="s")
    for index in range(OUTBOX_MESSAGES):
        tab.send({"type": "robot", "n": index})
    assert not tab.ended  # up to the limit, every message waits for the page
    for index in range(5 * OUTBOX_MESSAGES):  # a long walk's progress to a stalled browser
        tab.send({"type": "robot", "n": index})
    # Past it, what waited is dropped, nothing more queues up, and the writer is told to end with the reason.
    assert tab.waiting_bytes == 0 and "fell behind (1000 messages" in tab.ended, tab.ended
    assert drained(tab) == [None]


def test_a_page_that_stops_reading_is_cut_off_at_the_byte_bound(monkeypatch) -> None:
    scene = "x" * (2 * 1024 * 1024)  # a full map of 16k places is ~2.2 MB
    tab = Tab(session="s")
    for _ in range(OUTBOX_BYTES // len(scene)):
        tab.send_text(scene)
    assert not tab.ended and tab.waiting_bytes == OUTBOX_BYTES
    tab.send_text(scene)
    assert "MB not read" in tab.ended and tab.waiting_bytes == 0
    monkeypatch.setattr(hub, "OUTBOX_BYTES", 100)  # the bound is read when a message comes
    small = Tab(session="t")
    small.send_text("y" * 60)
    small.send_text("y" * 60)
    assert small.ended and drained(small) == [None]


def test_an_ended_tab_takes_nothing_more() -> None:
    tab = Tab(session="s")
    tab.send_text("a")
    tab.end("the console is closing")
    tab.send_text("b")
    assert tab.ended == "the console is closing" and drained(tab) == [None]
