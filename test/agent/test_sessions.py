"""Conversation sessions: bounded memory of the recent exchanges, per session id."""
from __future__ import annotations

import threading

import pytest

from heracles_ros.agent.sessions import MAX_EXCHANGE_CHARS, Exchange, Sessions
from heracles_ros.errors import ConfigError


def test_a_session_replays_its_exchanges_as_earlier_turns_and_no_session_has_none():
    sessions = Sessions()
    sessions.record("op", Exchange("ask", "Which box is nearest the bicycle?", "O5"))
    sessions.record("op", Exchange("command", "Bring it here.", "(holding O5)", "Goal in words: hold O5 (box)"))
    sessions.record("", Exchange("ask", "Ignored?", "yes"))
    messages = sessions.messages("op")
    assert [(m.role, m.content) for m in messages] == [
        ("user", "Question: Which box is nearest the bicycle?"),
        ("assistant", "<answer>O5</answer>"),
        ("user", "Instruction: Bring it here."),
        ("assistant", "Goal in words: hold O5 (box)\n<answer>(holding O5)</answer>"),
    ]
    assert sessions.messages("") == [] and sessions.messages("someone else") == [] and len(sessions) == 1


def test_memory_is_bounded_per_session_and_in_sessions_least_recently_used_first():
    sessions = Sessions(max_exchanges=2, max_sessions=2)
    for i in range(5):
        sessions.record("a", Exchange("ask", f"q{i}", f"a{i}"))
    assert [e.request for e in sessions.history("a")] == ["q3", "q4"]
    sessions.record("b", Exchange("ask", "b", "b"))
    sessions.history("a")  # a is used again: b is now the least recently used
    sessions.record("c", Exchange("ask", "c", "c"))
    assert (sessions.history("b"), len(sessions)) == ([], 2)
    assert sessions.history("a") and sessions.history("c")
    with pytest.raises(ConfigError):
        Sessions(max_exchanges=0)


def test_sessions_are_safe_to_share_between_request_threads():
    sessions = Sessions(max_exchanges=1000, max_sessions=10)

    def talk(name: str) -> None:
        for i in range(200):
            sessions.record(name, Exchange("ask", f"{name}{i}", "x"))

    threads = [threading.Thread(target=talk, args=(f"s{k}",)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(len(sessions.history(f"s{k}")) == 200 for k in range(4))


def test_a_session_is_bounded_by_size_whatever_the_model_or_operator_wrote():
    sessions = Sessions(max_exchanges=3, max_sessions=2)
    huge = "x" * 1_000_000
    for name in ("a", "b", "c"):
        for _ in range(5):
            sessions.record(name, Exchange("ask", huge, huge, huge))
    kept = [sessions.history(name) for name in ("a", "b", "c")]
    assert kept[0] == [] and len(kept[1]) == len(kept[2]) == 3
    for exchange in kept[1] + kept[2]:
        assert len(exchange.request) <= MAX_EXCHANGE_CHARS
        assert len(exchange.answer) + len(exchange.note) <= MAX_EXCHANGE_CHARS
        assert "1000000 chars" in exchange.request  # a cut is marked, not silent
    total = sum(len(m.content) for name in ("b", "c") for m in sessions.messages(name))
    assert total <= 2 * 3 * (2 * MAX_EXCHANGE_CHARS + 100)


def test_a_short_exchange_is_kept_as_it_was():
    sessions = Sessions()
    exchange = Exchange("command", "bring it to the lounge", "(at-place R2)", "the goal in words")
    sessions.record("s", exchange)
    assert sessions.history("s") == [exchange]
