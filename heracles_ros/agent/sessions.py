"""Conversation sessions: the recent exchanges of one operator's conversation, so follow-ups make sense.

"Bring it to the lounge" after "which box is nearest the bicycle?" only
grounds if the model sees that exchange; so does "the one in the kitchen"
after the agent asked back which bicycle was meant. A request that names a
session gets that session's last exchanges (request and final answer, not the
queries in between) as earlier turns of its conversation, and adds its own
when it ends with an answer, goal, change or clarification. Memory is
bounded: a few exchanges per session, and the least recently used sessions
are forgotten first.
"""
from __future__ import annotations

import threading
from collections import OrderedDict, deque
from dataclasses import dataclass

from heracles_ros.agent.llm import Message
from heracles_ros.errors import ConfigError

#: Most characters one exchange keeps of its request, and of its answer and note together: with the counts
#: this bounds a session's memory (and the prompt it adds) by size, whatever a model or an operator wrote.
MAX_EXCHANGE_CHARS = 4000

#: How each task's request is labelled in the conversation (as in the prompt).
REQUEST_LABELS = {"ask": "Question", "command": "Instruction", "correct": "Correction"}


@dataclass(frozen=True)
class Exchange:
    task: str
    request: str
    #: The final answer as the model gave it (between <answer> tags), e.g. "O5" or "(holding O5)".
    answer: str
    #: What the operator was told beside it (candidates of a clarification, a goal in words), or "".
    note: str = ""

    def messages(self) -> list[Message]:
        reply = (self.note + "\n" if self.note else "") + f"<answer>{self.answer}</answer>"
        return [Message("user", f"{REQUEST_LABELS[self.task]}: {self.request}"), Message("assistant", reply)]


class Sessions:
    """Thread-safe store of sessions by id; ``max_exchanges`` per session, ``max_sessions`` in all."""

    def __init__(self, *, max_exchanges: int = 6, max_sessions: int = 100):
        if max_exchanges < 1 or max_sessions < 1:
            raise ConfigError("a session keeps at least one exchange, and at least one session is kept")
        self.max_exchanges = max_exchanges
        self.max_sessions = max_sessions
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, deque[Exchange]] = OrderedDict()

    def history(self, session: str) -> list[Exchange]:
        """The session's exchanges, oldest first ([] for '' or an unknown session)."""
        if not session:
            return []
        with self._lock:
            exchanges = self._sessions.get(session)
            if exchanges is None:
                return []
            self._sessions.move_to_end(session)
            return list(exchanges)

    def messages(self, session: str) -> list[Message]:
        """The session's exchanges as earlier turns of a conversation."""
        return [m for exchange in self.history(session) for m in exchange.messages()]

    def record(self, session: str, exchange: Exchange) -> None:
        if not session:
            return
        exchange = _bounded(exchange)
        with self._lock:
            exchanges = self._sessions.get(session)
            if exchanges is None:
                exchanges = self._sessions[session] = deque(maxlen=self.max_exchanges)
            self._sessions.move_to_end(session)
            exchanges.append(exchange)
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)


def _bounded(exchange: Exchange) -> Exchange:
    """The exchange cut to :data:`MAX_EXCHANGE_CHARS` (request; answer and note together), marked where cut."""
    def cut(text: str, limit: int) -> str:
        return text if len(text) <= limit else text[: max(0, limit - 20)] + f" [... {len(text)} chars]"

    note = cut(exchange.note, MAX_EXCHANGE_CHARS // 2)
    answer = cut(exchange.answer, MAX_EXCHANGE_CHARS - len(note))
    return Exchange(exchange.task, cut(exchange.request, MAX_EXCHANGE_CHARS), answer, note)
