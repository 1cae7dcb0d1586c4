"""The map's reads on real mirrored graphs: after a change, only what changed is read, and the map the feed then
holds is the database's; when the history cannot tell what changed, the map is read whole and says why."""
from __future__ import annotations

import json
from typing import Any

import pytest
from support.changed_map import change_map

from heracles_ros.console import map_reads
from heracles_ros.console.map_reads import read_map, read_whole_map
from heracles_ros.console.scene_feed import MapRead, SceneFeed
from heracles_ros.graphdb.cypher.mirror import BEGIN_UPDATE
from heracles_ros.mirror.corrections import Corrections
from heracles_ros.mirror.history import HistorySettings
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.scene.synthetic import generate_scene

pytestmark = pytest.mark.backends("falkordb")


def shown(feed: SceneFeed) -> tuple[Any, ...]:
    """What the feed holds: rooms and objects, places, place edges."""
    state = feed._map
    return dict(state.items), dict(state.places), set(state.edges)


def whole_feed(store: Any) -> SceneFeed:
    feed = SceneFeed()
    feed.apply(read_whole_map(store, why="the test's reference"))
    return feed


def read_after(store: Any, feed: SceneFeed, page: Page | None = None) -> MapRead:
    """The feed's read of what changed, applied to it (and its message to ``page``)."""
    read = read_map(store, feed.mark, places_shown=feed.place_count)
    diff = feed.apply(read)
    if page is not None:
        page.take(json.loads(diff.to_text()))
    return read


class Page:
    """What a page holds after the scene messages it got, kept as map.js keeps it."""

    def __init__(self, feed: SceneFeed):
        self.items: dict[str, tuple[str, float, float]] = {}
        self.places: dict[str, tuple[float, float]] = {}
        self.edges: set[tuple[str, str]] = set()
        for text in feed.full_texts()[1]:
            self.take(json.loads(text))

    def take(self, message: dict[str, Any]) -> None:
        if message["full"]:
            self.items.clear(), self.places.clear(), self.edges.clear()
        for symbol in message["remove"]:
            self.items.pop(symbol, None), self.places.pop(symbol, None)
        self.items.update({item["symbol"]: (item["layer"], item["x"], item["y"]) for item in message["upsert"]})
        xy = message["places"]["xy"]
        self.places.update({s: (xy[2 * i], xy[2 * i + 1]) for i, s in enumerate(message["places"]["symbols"])})
        self.edges -= {tuple(edge) for edge in message["edges"]["remove"]}
        self.edges |= {tuple(edge) for edge in message["edges"]["add"]}

    def state(self) -> tuple[Any, ...]:
        return self.items, self.places, self.edges


def database_map(store: Any) -> tuple[Any, ...]:
    """What the map must show, straight from a whole read, as a page holds it."""
    feed = whole_feed(store)
    return Page(feed).state()


@pytest.mark.timeout(240)
def test_after_a_one_percent_change_only_the_changed_places_are_read(store):
    """1 % of a 1,593-place scene changes through the mirror (places moved 2 m, removed, added; an object moved,
    one removed, one added): the read names exactly the changed places, reads the rows of those still there and
    nothing else, and the feed then holds what a whole read of the database holds."""
    scene = generate_scene("large", 0, scale=0.1)
    mirror = Mirror(store)
    mirror.reconcile(scene)
    feed = whole_feed(store)
    assert read_after(store, feed).changed == frozenset()  # nothing changed: no place read
    page = Page(feed)
    changes = change_map(scene, place_share=0.01)
    mirror.reconcile(scene)
    places = feed.place_count
    read = read_after(store, feed, page)
    assert not read.whole and read.why_whole == "" and read.settled
    assert read.changed == changes.places and len(changes.places) < 0.015 * places
    assert set(read.places) == {*changes.moved_places, *changes.added_places}
    for symbol, (x, y) in {**changes.moved_places, **changes.added_places}.items():
        assert read.places[symbol] == (round(x, 3), round(y, 3))
    assert all(changes.places & set(edge) for edge in read.edges)  # only the changed places' edges
    assert shown(feed) == shown(whole_feed(store))
    assert page.state() == database_map(store)  # the diff took the page's map to the database's
    items = feed.items()
    for symbol, (x, y) in {**changes.moved_objects, **changes.added_objects}.items():
        assert (items[symbol].x, items[symbol].y) == (round(x, 3), round(y, 3))
    assert not set(changes.removed_objects) & set(items)


def test_an_unchanged_map_reads_no_place_and_a_read_diff_is_empty(small_store):
    feed = whole_feed(small_store)
    read = read_after(small_store, feed)
    assert (read.whole, read.changed, read.places) == (False, frozenset(), {})
    assert feed.apply(read_map(small_store, feed.mark, places_shown=feed.place_count)).empty


def test_without_a_history_every_read_is_whole(store, small_scene):
    mirror = Mirror(store, history=HistorySettings(enabled=False))
    mirror.reconcile(small_scene)
    feed = whole_feed(store)
    assert feed.mark is None
    changes = change_map(small_scene)
    mirror.reconcile(small_scene)
    read = read_after(store, feed)
    assert read.whole and read.why_whole == "no earlier read to start from"
    assert shown(feed) == shown(whole_feed(store)) and set(changes.added_places) <= set(shown(feed)[1])


def test_a_mirror_that_stopped_recording_history_is_read_whole(small_store, small_scene):
    """The mirror restarted with its history off: the clock stays, the generation moves, the places change."""
    feed = whole_feed(small_store)
    change_map(small_scene)
    Mirror(small_store, history=HistorySettings(enabled=False)).reconcile(small_scene)
    read = read_after(small_store, feed)
    assert read.whole and read.why_whole == "the mirror changed the map without a history event"
    assert shown(feed) == shown(whole_feed(small_store))


def test_a_history_pruned_past_the_last_read_is_read_whole(store, small_scene):
    mirror = Mirror(store, history=HistorySettings(max_changes=20))
    mirror.reconcile(small_scene)
    feed = whole_feed(store)
    for _ in range(2):  # each snapshot moves ~26 places: past the cap, the first snapshot's events go
        change_map(small_scene, place_share=0.25)
        mirror.reconcile(small_scene)
    read = read_after(store, feed)
    assert read.whole and read.why_whole == "the history was pruned past the last read"
    assert shown(feed) == shown(whole_feed(store))


def test_a_correction_is_read_whole(small_store):
    """An operator's correction moves a place without a history event."""
    feed = whole_feed(small_store)
    place = sorted(feed._map.places)[0]
    x = feed.position(place)[0]  # type: ignore[index]
    Corrections(small_store).apply([(place, "x", x + 1.0)], author="ana")
    read = read_after(small_store, feed)
    assert read.whole and read.why_whole == "the corrections changed"
    assert feed.position(place) == (round(x + 1.0, 3), pytest.approx(feed.position(place)[1]))  # type: ignore[index]


def test_a_history_begun_again_after_a_reset_is_read_whole(store, small_scene):
    mirror = Mirror(store)
    mirror.reconcile(small_scene, stamp_s=1_800_000_000.0)
    feed = whole_feed(store)
    store.write("MATCH (n) DETACH DELETE n")  # what heracles db reset leaves: an empty graph
    Mirror(store).reconcile(small_scene, stamp_s=1_800_000_100.0)
    read = read_after(store, feed)
    assert read.whole and read.why_whole == "the history began again"


def test_many_changed_places_and_a_long_time_are_read_whole(small_store, small_scene, monkeypatch):
    feed = whole_feed(small_store)
    mark = feed.mark
    assert mark is not None
    # Just past the period: whole_at + WHOLE_EVERY_S - whole_at can round to less than WHOLE_EVERY_S (seed 408).
    read = read_map(small_store, mark, places_shown=feed.place_count,
                    now=mark.whole_at + map_reads.WHOLE_EVERY_S + 0.001)
    assert read.whole and read.why_whole == f"{map_reads.WHOLE_EVERY_S:g} s since the last whole read"
    monkeypatch.setattr(map_reads, "PARTIAL_MIN", 10)  # the small scene's 104 places: a fifth is 20
    change_map(small_scene, place_share=0.5)
    Mirror(small_store).reconcile(small_scene)
    read = read_after(small_store, feed)
    assert read.whole and read.why_whole.endswith("places changed"), read.why_whole


def test_a_read_during_a_reconcile_keeps_its_mark_and_asks_again(small_store, small_scene, monkeypatch):
    """A reconcile in progress (its flag set, its events not all written): the read answers what the database
    holds, marked unsettled, and leaves the mark where it was, so the next read asks for the same events."""
    feed = whole_feed(small_store)
    before = feed.mark
    changes = change_map(small_scene)
    Mirror(small_store).reconcile(small_scene)
    monkeypatch.setattr(map_reads, "RECONCILE_WAIT_S", 0.05)
    small_store.write(BEGIN_UPDATE)  # the next reconcile has begun
    read = read_after(small_store, feed)
    assert not read.settled and read.mark == before
    small_store.write("MATCH (m:MirrorMeta {id: 'mirror'}) SET m.writing = false")  # ... and ended
    again = read_after(small_store, feed)
    assert again.settled and again.changed == changes.places and again.mark != before
