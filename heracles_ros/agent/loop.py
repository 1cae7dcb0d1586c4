"""The agent loop: prompt, model turns, Cypher tool calls, checked final answers.

One request is a conversation with the model. It may call its tools
(:mod:`~heracles_ros.agent.toolbox`: read-only Cypher, ``find_objects`` for the
operator's words, ``scene_at`` for the past) up to a limit (the paper's agentic
method), make exactly one Cypher query (single-query), or none at all with the
whole scene in its prompt (context window). Its final answer is
read from ``<answer>…</answer>`` and checked before anyone relies on it: SLDP
answers against the requested type, PDDL goals by the planner's checker,
corrections by the corrections overlay. A rejected answer goes back to the
model with the exact problems, a bounded number of times; after that the
request fails with a clear error. Failures come back in the result's ``error``
field (the caller's process keeps running), with the usage spent so far.

Questions, commands and corrections may end with a clarification instead
(``CLARIFY("question", <O3, O7>)``, see :mod:`~heracles_ros.formats.sldp`)
when the scene does not pin down what they mean; the candidates are checked
and described from the database. A request that names a ``session`` sees
that session's recent exchanges (:mod:`~heracles_ros.agent.sessions`), so
the operator's reply to a clarification, or "it", continues the conversation.
"""
from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from heracles_ros.agent.find_tool import FindTool
from heracles_ros.agent.llm import LLM, Message, Reply, ToolSpec
from heracles_ros.agent.prompt import Prompt, PromptBuilder
from heracles_ros.agent.referents import Referents
from heracles_ros.agent.results import AskResult, CommandResult, CorrectResult, Usage
from heracles_ros.agent.sessions import Exchange, Sessions
from heracles_ros.agent.settings import AgentSettings
from heracles_ros.agent.time_tool import TimeTool, gone_notes
from heracles_ros.agent.tool import CypherTool, ToolOutput
from heracles_ros.agent.toolbox import Toolbox
from heracles_ros.errors import (
    AnswerFormatError,
    ConfigError,
    CorrectionError,
    GoalError,
    HeraclesError,
    LLMOutputError,
    LLMTimeout,
    RequestCancelled,
    describe,
)
from heracles_ros.formats.goal_ast import GoalExpr, symbols
from heracles_ros.formats.goal_words import goal_in_words
from heracles_ros.formats.sldp import (
    Clarification,
    SldpDict,
    SldpList,
    SldpSet,
    SldpValue,
    check_type,
    parse_clarification,
    parse_sldp,
    to_sldp,
)
from heracles_ros.graphdb.scene_presence import require_scene
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.meaning.resolver import Resolver
from heracles_ros.mirror.corrections import Applied, Corrections

log = logging.getLogger(__name__)

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_EXPLANATION_CHARS = 1000
T = TypeVar("T")
#: ``on_query(query)``: told of every Cypher query the model has run, as it runs (progress for operators).
QueryListener = Callable[[str], None]
#: ``cancelled()``: True once the caller gave the request up; checked between model turns and before each
#: query (and by the command pipeline before planning), so a cancel ends a request within the current turn.
CancelToken = Callable[[], bool]


class Rejected(Exception):
    """A final answer that failed its check; ``feedback`` goes back to the model."""

    def __init__(self, kind: str, feedback: str, error: HeraclesError):
        super().__init__(feedback)
        self.kind = kind
        self.feedback = feedback
        self.error = error


@dataclass
class _Session:
    """One request's conversation and what it has cost."""

    messages: list[Message]
    usage: Usage = field(default_factory=Usage)
    started: float = field(default_factory=time.monotonic)
    turns: int = 0
    on_query: QueryListener | None = None
    cancelled: CancelToken | None = None

    def check_cancelled(self, before: str) -> None:
        if self.cancelled is not None and self.cancelled():
            raise RequestCancelled(f"cancelled before {before} (after {self.turns} model turns)")

    def add(self, reply: Reply) -> None:
        self.usage.input_tokens += reply.input_tokens
        self.usage.output_tokens += reply.output_tokens
        self.messages.append(reply.as_message())


class Agent:
    """Answers questions, grounds commands and applies corrections over one graph store."""

    def __init__(
        self,
        store: GraphStore,
        llm: LLM,
        settings: AgentSettings | None = None,
        *,
        checker: Any = None,
        sessions: Sessions | None = None,
        query_store: GraphStore | None = None,
        resolver: Callable[[], Resolver] | None = None,
    ):
        """``query_store`` serves the model's tools (e.g. a read replica); ``store`` everything else.
        ``resolver`` makes the resolver ``find_objects`` asks, on the tool's first call (a node passes its own,
        shared with its ``find`` service; a failure is the call's tool error, tried again on the next call);
        without it, one with the offline word vectors on the tools' store."""
        self.store = store
        self.llm = llm
        self.settings = settings = AgentSettings() if settings is None else settings
        self.max_tool_calls = llm.settings.max_tool_calls
        tools_store = query_store or store
        self._make_resolver = resolver
        self._resolver: Resolver | None = None
        self._resolver_lock = threading.Lock()
        #: The Cypher tool (the toolbox's first).
        self.tool = CypherTool(
            tools_store, timeout_s=settings.query_timeout_s, token_budget=settings.result_token_budget,
            snapshot_wait_s=settings.snapshot_wait_s,
        )
        self.tools = Toolbox(
            self.tool, FindTool(self.resolver, token_budget=settings.result_token_budget),
            TimeTool(tools_store, token_budget=settings.result_token_budget, snapshot_wait_s=settings.snapshot_wait_s),
        )
        self.prompts = PromptBuilder(
            store, max_tool_calls=self.max_tool_calls, result_token_budget=settings.result_token_budget
        )
        self._checker = checker
        self.referents = Referents(store, robot_symbol=settings.robot_symbol)
        #: Recent exchanges per session id (requests without a session neither read nor add any).
        self.sessions = Sessions() if sessions is None else sessions  # an empty one is falsy: keep it

    def resolver(self) -> Resolver:
        """The resolver ``find_objects`` asks (made on first use when none was given)."""
        with self._resolver_lock:
            if self._resolver is None:
                make = self._make_resolver
                self._resolver = (make() if make is not None
                                  else Resolver(self.tool.store, wait_s=self.settings.snapshot_wait_s))
            return self._resolver

    @property
    def checker(self) -> Any:
        """The goal checker, a :class:`~heracles_ros.planning.planner.Planner` (built on first use: it reads
        the PDDL domain; a node passes its own, which also plans)."""
        if self._checker is None:
            from heracles_ros.planning.planner import Planner

            self._checker = Planner(self.store)
        return self._checker

    # -- requests -------------------------------------------------------------------
    def ask(self, question: str, answer_type: str | None = None, *, session: str = "") -> AskResult:
        """Answer a question as a validated SLDP expression (of ``answer_type`` when given), or ask back."""
        result = AskResult(answer_type=answer_type or "")

        def check(text: str) -> SldpValue:
            try:
                value = parse_sldp(text)
                if answer_type:
                    check_type(value, answer_type)
            except AnswerFormatError as exc:
                raise Rejected("answer", f"Your answer {text.strip()!r} was rejected: {exc}", exc) from exc
            return value

        conversation = self._start(result, "ask", question, answer_type=answer_type, session=session)
        if conversation is not None:
            outcome = self._run(result, conversation, check)
            if outcome is not None:
                value, result.explanation, answer = outcome
                if isinstance(value, Clarification):
                    self._clarified(result, value)
                else:
                    result.answer = to_sldp(value)
                self._remember(session, "ask", question, answer, result)
        return result

    def command(
        self, instruction: str, *, session: str = "", on_query: QueryListener | None = None,
        cancelled: CancelToken | None = None,
    ) -> CommandResult:
        """A PDDL goal the checker accepted (or a question back): grounding only, planning is the command
        pipeline's (:mod:`heracles_ros.command_pipeline`).

        ``cancelled`` is polled between model turns and before each query: once it is true the request
        ends with a RequestCancelled error and nothing more runs.
        """
        result = CommandResult()

        def check(text: str) -> GoalExpr:
            try:
                goal: GoalExpr = self.checker.check(text)
            except GoalError as exc:
                problems = "\n".join(f"- {p}" for p in [*exc.problems, *gone_notes(self.store, text)])
                feedback = (
                    f"The goal {text.strip()} was rejected by the goal checker:\n{problems}\n"
                    "Fix the goal (query the database again if you need to) and give the corrected goal "
                    "between <answer> tags. A goal is about the scene now: it names only nodes that are in the "
                    "scene now; if the instruction asks for a past state, ask the operator back."
                )
                raise Rejected("goal", feedback, exc) from exc
            return goal

        conversation = self._start(result, "command", instruction, session=session, on_query=on_query,
                                   cancelled=cancelled)
        if conversation is None:
            return result
        outcome = self._run(result, conversation, check)
        if outcome is None:
            return result
        goal, result.explanation, answer = outcome
        if isinstance(goal, Clarification):
            self._clarified(result, goal)
        else:
            result.goal = str(goal)
            result.goal_text = self._in_words(goal)
        self._remember(session, "command", instruction, answer, result)
        return result

    def correct(self, instruction: str, *, author: str = "operator", session: str = "") -> CorrectResult:
        """Apply the narrow property updates and additions the model proposes, only through the corrections
        overlay (which checks them all, and writes all or nothing), or ask back when the statement's referent
        is ambiguous.

        An empty proposal (nothing matches the operator's statement) is an answer:
        no change, and the model's explanation says why; so is an addition of an
        object that exists already (``existing`` names it). ``author`` is recorded
        with the correction. The context method cannot correct (no tool to find
        the nodes): the prompt builder refuses it, which lands in the result's
        error like any set-up failure.
        """
        result = CorrectResult()
        corrections = Corrections(self.store, self.settings.additions)

        def check(text: str) -> Applied | None:
            try:
                proposed = parse_changes(text)
                if not proposed:
                    return None
                triples = [item for item in proposed if isinstance(item, tuple)]
                additions = [item for item in proposed if isinstance(item, dict)]
                applied = corrections.propose(
                    triples, additions, max_nodes=self.settings.correction_max_nodes, author=author,
                    request=instruction.strip(),
                )
            except CorrectionError as exc:
                feedback = (
                    f"The correction {text.strip()} was refused (nothing of it was applied): {exc}\n"
                    "Propose a corrected list of [symbol, property, value] triples and "
                    '{"add": CLASS, "at": [x, y, z], "near": SYMBOL} additions between <answer> tags.'
                )
                raise Rejected("correction", feedback, exc) from exc
            self.prompts.facts.invalidate()  # a corrected or added class may be new to the prompt
            return applied

        conversation = self._start(result, "correct", instruction, session=session)
        if conversation is not None:
            outcome = self._run(result, conversation, check)
            if outcome is not None:
                applied, result.explanation, answer = outcome
                if isinstance(applied, Clarification):
                    self._clarified(result, applied)
                elif applied is not None:
                    result.changes = applied.lines()
                    result.added = [added.symbol for added in applied.added]
                    result.existing = [str(existing) for existing in applied.existing]
                if result.changes:
                    log.info("correction applied: %s", "; ".join(result.changes))
                elif not result.clarification:
                    log.info("no correction made: %s", "; ".join(result.existing) or result.explanation)
                self._remember(session, "correct", instruction, answer, result)
        return result

    # -- clarifications and sessions ------------------------------------------------------
    def _clarified(self, result: AskResult | CommandResult | CorrectResult, clarification: Clarification) -> None:
        result.clarification = clarification.question
        result.candidates, _ = self.referents.describe(clarification.candidates)
        if isinstance(result, CommandResult):  # what a search could go and look for
            result.missing = clarification.missing

    def _in_words(self, goal: GoalExpr) -> str:
        try:
            return goal_in_words(goal, self.referents.classes(symbols(goal)))
        except HeraclesError as exc:  # the words are a courtesy: the goal itself is checked already
            log.warning("goal %s not put in words: %s", goal, exc)
            return goal_in_words(goal)

    def _remember(self, session: str, task: str, request: str, answer: str, result: Any) -> None:
        note = ""
        if getattr(result, "clarification", ""):
            note = "Candidates: " + "; ".join(c.description for c in result.candidates)
        elif getattr(result, "goal_text", ""):
            note = f"Goal in words: {result.goal_text}"
        elif getattr(result, "changes", None) or getattr(result, "existing", None):
            note = "Applied: " + "; ".join([*result.changes, *result.existing])
        self.sessions.record(session, Exchange(task, request.strip(), answer, note))

    # -- the loop ---------------------------------------------------------------------
    def _start(
        self, result: Any, task: str, request: str, *, answer_type: str | None = None, session: str = "",
        on_query: QueryListener | None = None, cancelled: CancelToken | None = None,
    ) -> _Session | None:
        started = time.monotonic()
        try:
            if not request or not request.strip():
                raise ConfigError(f"empty {task} request")
            # Before the model: an empty or misspelt graph would read as an empty room ("0 bags").
            require_scene(self.store, reader=f"cannot {task}")
            prompt: Prompt = self.prompts.build(task, request.strip(), method=self.settings.method,
                                               answer_type=answer_type)
        except HeraclesError as exc:
            result.error = describe(exc)
            result.usage.latency_s = time.monotonic() - started
            return None
        system, *rest = prompt.messages()
        messages = [system, *self.sessions.messages(session), *rest]  # earlier exchanges, then this request
        return _Session(messages, usage=result.usage, started=started, on_query=on_query, cancelled=cancelled)

    def _run(
        self, result: Any, session: _Session, check: Callable[[str], T]
    ) -> tuple[T | Clarification, str, str] | None:
        """Converse until ``check`` accepts an answer (or a clarification is given): the value, the
        explanation and the answer text; errors land in ``result.error``."""
        try:
            return self._converse(session, check)
        except HeraclesError as exc:
            result.error = describe(exc)
            log.warning("request failed after %d model turns: %s", session.turns, result.error)
            return None
        finally:
            session.usage.latency_s = time.monotonic() - session.started

    def _converse(self, session: _Session, check: Callable[[str], T]) -> tuple[T | Clarification, str, str]:
        retries = self.settings.retries
        # Every turn either runs a query, spends a retry, or ends the request; the slack
        # covers a model that keeps calling tools after they were withdrawn.
        max_turns = self.max_tool_calls + sum(retries.values()) + 3
        while True:
            if session.turns >= max_turns:
                raise LLMOutputError(f"the model gave no acceptable final answer in {session.turns} turns")
            self._check_deadline(session)
            session.check_cancelled("the next model turn")
            offer = self._may_query(session)
            reply = self.llm.chat(session.messages, self._offered() if offer else [])
            session.turns += 1
            session.add(reply)
            if reply.tool_calls:
                self._run_tools(session, reply, offered=offer)
                continue
            answer = extract_answer(reply.text)
            try:
                if answer is None:
                    raise Rejected(
                        "answer",
                        "Your reply has no final answer. Give it between <answer> and </answer> tags.",
                        LLMOutputError(f"the model's reply has no <answer> tags: {_snippet(reply.text)}"),
                    )
                clarification = self._clarification(answer)
                value = clarification if clarification is not None else check(answer)
                return value, explanation_of(reply.text), answer
            except Rejected as rejected:
                if retries[rejected.kind] <= 0:
                    raise rejected.error from rejected
                retries[rejected.kind] -= 1
                log.info("answer rejected (%s), fed back: %s", rejected.kind, rejected.feedback)
                session.messages.append(Message("user", rejected.feedback))

    def _clarification(self, answer: str) -> Clarification | None:
        """The model's question back, its candidates checked against the graph; Rejected with the problem."""
        try:
            clarification = parse_clarification(answer)
        except AnswerFormatError as exc:
            raise Rejected("answer", f"Your clarification {answer!r} was rejected: {exc}", exc) from exc
        if clarification is None:
            return None
        _, missing = self.referents.describe(clarification.candidates)
        if missing:
            error = AnswerFormatError(f"the clarification names symbols not in the scene graph: {', '.join(missing)}")
            raise Rejected("answer", f"Your clarification was rejected: {error}. Name only symbols the database "
                           "returned.", error)
        return clarification

    @property
    def _query_limit(self) -> int:
        """Queries one request may run under this method."""
        return {"context": 0, "single": 1}.get(self.settings.method, self.max_tool_calls)

    def _offered(self) -> list[ToolSpec]:
        return self.tools.offered(self.settings.method)

    def _may_query(self, session: _Session) -> bool:
        return session.usage.tool_calls < self._query_limit

    def _run_tools(self, session: _Session, reply: Reply, *, offered: bool) -> None:
        """Answer every call (each call id needs a reply), running those within the limit (every call counts,
        whichever tool it names)."""
        limit = self._query_limit
        for call in reply.tool_calls:
            session.check_cancelled("a query")
            if not offered or session.usage.tool_calls >= limit:
                text = (
                    f"NOT RUN: the limit of {limit} {'query' if limit == 1 else 'queries'} is reached. "
                    "Give your final answer now from what you already know."
                )
            else:
                session.usage.tool_calls += 1
                self._check_deadline(session)
                tool = self.tools.tool_for(call, self._offered())
                if isinstance(tool, ToolOutput):
                    output = tool
                else:
                    arguments = call.arguments or {}
                    recorded = tool.record(arguments)
                    session.usage.queries.append(recorded)
                    output = tool.run(arguments)
                    if session.on_query is not None:
                        session.on_query(recorded)
                text = output.text
                if output.error:
                    log.info("%s call failed, fed back to the model: %s", call.name, output.error)
            session.messages.append(Message("tool", text, tool_call_id=call.id, name=call.name))
        if not self._may_query(session):
            # The paper's second step: with no queries left, ask for the answer outright.
            session.messages.append(
                Message("user", "You have no queries left. Give your final answer between <answer> and </answer> tags.")
            )

    def _check_deadline(self, session: _Session) -> None:
        limit_s = self.settings.request_timeout_s
        if limit_s is None:
            return
        elapsed = time.monotonic() - session.started
        if elapsed > limit_s:
            raise LLMTimeout(f"the request took longer than its {limit_s:g} s limit ({elapsed:.1f} s)")


# --- answer text ------------------------------------------------------------------------
def extract_answer(text: str) -> str | None:
    """What the last ``<answer>…</answer>`` pair holds (stripped), or None."""
    found = _ANSWER.findall(text or "")
    return found[-1].strip() if found else None


def explanation_of(text: str) -> str:
    """The reply without its answer: the model's stated reasoning, shortened."""
    rest = _ANSWER.sub("", text or "").strip()
    return rest if len(rest) <= _EXPLANATION_CHARS else rest[: _EXPLANATION_CHARS - 3] + "..."


def parse_changes(text: str) -> list[tuple[str, str, Any] | dict[str, Any]]:
    """[[symbol, property, value], ..., {"add": CLASS, "at": [x, y, z], "near": SYMBOL}, ...] from JSON (or SLDP
    lists): property updates as triples, additions as the model wrote them (the overlay checks them);
    CorrectionError naming the problem."""
    try:
        data: Any = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        try:
            data = _plain(parse_sldp(text))
        except AnswerFormatError as exc:
            raise CorrectionError(
                f"the changes are neither JSON nor SLDP: {exc}; write e.g. [[\"O43\", \"class\", \"bag\"]] or "
                '[{"add": "fire hydrant", "at": [1.0, 2.0, 0.0], "near": "O12"}]'
            ) from exc
    if isinstance(data, dict):
        data = [data]
    if isinstance(data, list) and len(data) == 3 and isinstance(data[0], str):
        data = [data]  # one bare triple
    if not isinstance(data, list):
        raise CorrectionError(f"the changes must be a list of [symbol, property, value] triples, got {text!r}")
    changes: list[tuple[str, str, Any] | dict[str, Any]] = []
    for index, item in enumerate(data, start=1):
        if isinstance(item, dict) and {"symbol", "property", "value"} <= set(item):
            changes.append((item["symbol"], item["property"], item["value"]))
        elif isinstance(item, dict) and ("add" in item or "at" in item):
            changes.append(item)
        elif isinstance(item, list | tuple) and len(item) == 3:
            changes.append((item[0], item[1], item[2]))
        else:
            raise CorrectionError(f"change {index} is not a [symbol, property, value] triple or an addition "
                                  f'{{"add": CLASS, "at": [x, y, z], "near": SYMBOL}}: {item!r}')
    return changes


def _plain(value: SldpValue) -> Any:
    if isinstance(value, SldpList | SldpSet):
        return [_plain(v) for v in value.items]
    if isinstance(value, SldpDict):
        return {k: _plain(v) for k, v in value.items}
    return value


def _snippet(text: str, limit: int = 160) -> str:
    text = " ".join((text or "").split())
    if not text:
        return "(empty reply)"
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
