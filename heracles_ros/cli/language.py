"""``heracles ask|command|correct|prompt``: talk to the scene graph in plain language from a shell.

``ask`` answers a question (SLDP), ``command`` grounds an instruction to a
checked PDDL goal and plans it, ``correct`` applies an operator's correction
through the corrections overlay; by default in this process on ``--db`` with
the model named here, with ``--live`` through the running language server's
services (its model, its database, and a conversation named by ``--session``:
:mod:`.live`); ``prompt`` prints the prompt the model would
get, or its size in tokens per component. When the request does not pin down
what it means, ``ask`` and ``command`` print the model's question back and its
candidates and exit 3. ``command --execute`` hands the instruction to the
running system's ``language_server`` node as an ``execute_command`` goal and
follows it (:mod:`.execute`), because only that node can reach the dispatcher
and the robot (``heracles cancel`` and ``heracles stop`` go to the dispatcher
itself: :mod:`.control`).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from heracles_ros.agent.llm import PROVIDERS
from heracles_ros.agent.prompt import METHODS, TASKS
from heracles_ros.agent.results import AskResult, CommandResult, CorrectResult
from heracles_ros.cli import live
from heracles_ros.cli.common import add_db_options, print_json
from heracles_ros.cli.execute import EXIT_CLARIFY, execute
from heracles_ros.cli.live import add_live_options
from heracles_ros.errors import ConfigError, HeraclesError, describe


def register(sub: argparse._SubParsersAction) -> None:
    ask = sub.add_parser("ask", help="ask a question about the scene graph (answer in SLDP)")
    ask.add_argument("question", help="the question, e.g. 'How many bags are in the lounge?'")
    ask.add_argument("--type", dest="answer_type", default=None, metavar="T",
                     help="required SLDP answer type: string, number, point, list, set, dict, e.g. set[string]")
    ask.set_defaults(func=_ask)

    command = sub.add_parser("command", help="turn an instruction into a checked PDDL goal and a plan")
    command.add_argument("instruction", help="the instruction, e.g. 'Bring the box nearest the bicycle to P12'")
    command.add_argument("--no-plan", action="store_true", help="stop after the checked goal (no planning)")
    command.add_argument("--execute", action="store_true",
                         help="have the running language_server ground, plan and execute it on the robot, "
                         "following its progress (Ctrl-C cancels)")
    command.add_argument("--confirm", action="store_true",
                         help="with --execute: ask on the terminal before the robot moves")
    command.add_argument("--search", default="", metavar="WHAT",
                         help="with --execute: when the map lacks WHAT (words or a class), look for it first, then "
                         "carry out the instruction (the answer to 'the map has no ...; search for one?')")
    command.set_defaults(func=_command)

    correct = sub.add_parser("correct", help="correct the scene graph in plain language ('that bicycle is a bag')")
    correct.add_argument("instruction", help="the correction, e.g. 'The bicycle in the lounge is actually a bag'")
    correct.set_defaults(func=_correct)

    for parser in (ask, command, correct):
        parser.description = (
            "Two forms: by default in this process, on the "
            "database named by --db with the model named by --llm/--model (no running node needed); with --live "
            "through the running system's language_server (its database, its model, and the conversation named by "
            "--session)" + (", as --execute does to move the robot" if parser is command else "") + ".")
        _add_common(parser)
        _add_llm_options(parser)
        add_live_options(parser, what="language_server (its model and database)", session=True)
        parser.add_argument("--json", action="store_true", help="print the full result as JSON")

    prompt = sub.add_parser("prompt", help="print the agent's prompt, or its size in tokens per component")
    prompt.add_argument("--task", choices=TASKS, default="ask")
    prompt.add_argument("--method", choices=METHODS, default="agentic")
    prompt.add_argument("--input", default="How many objects are there?", metavar="TEXT",
                        help="the request to put in the prompt (default: a sample question)")
    prompt.add_argument("--type", dest="answer_type", default=None, metavar="T", help="SLDP answer type (ask)")
    prompt.add_argument("--max-tool-calls", type=int, default=5, help="tool-call limit stated in the prompt")
    prompt.add_argument("--stats", action="store_true",
                        help="tokens per component (cl100k), and the context-window prompt's total for comparison")
    prompt.add_argument("--json", action="store_true", help="with --stats: print the figures as JSON")
    _add_common(prompt)
    prompt.set_defaults(func=_prompt)


def _add_common(parser: argparse.ArgumentParser) -> None:
    add_db_options(parser)


def _add_llm_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--llm", choices=PROVIDERS, default=os.environ.get("HERACLES_LLM", "openai"),
                        help="model provider (default: openai, env HERACLES_LLM); keys only from OPENAI_API_KEY")
    parser.add_argument("--model", default="", help="model name (default: gpt-4.1 / qwen3:32b)")
    parser.add_argument("--base-url", default=None, metavar="URL",
                        help="OpenAI-compatible base URL (vLLM, llama.cpp, ...) or the Ollama host")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="S", help="seconds per model call")
    parser.add_argument("--max-tool-calls", type=int, default=5, help="Cypher queries per request (default 5)")
    parser.add_argument("--method", choices=METHODS, default="agentic",
                        help="agentic (default), single (one query) or context (whole scene in the prompt)")


# --- commands -----------------------------------------------------------------------
def _live(args: argparse.Namespace) -> bool:
    """Whether the request goes to the running language server; a session alone names none here."""
    if args.session and not (args.live or getattr(args, "execute", False)):
        raise ConfigError("--session continues a conversation of the running language_server: add --live"
                          + (" (or --execute)" if hasattr(args, "execute") else ""))
    return bool(args.live)


def _ask(args: argparse.Namespace) -> int:
    if _live(args):
        return live.ask(args)
    result = _request(args, AskResult, lambda agent: agent.ask(args.question, answer_type=args.answer_type))
    return _report(args, result, result.answer)


def _command(args: argparse.Namespace) -> int:
    if args.search and not args.execute:
        raise ConfigError("--search walks the robot: add --execute")
    if args.execute:
        return execute(args)
    if _live(args):
        return live.command(args)

    def run(agent: Any) -> CommandResult:
        from heracles_ros.command_pipeline import CommandPipeline

        # One planner for the request: the one the agent's goals were checked with.
        return CommandPipeline(agent.checker).command(agent, args.instruction, plan=not args.no_plan)

    result = _request(args, CommandResult, run)
    lines = [result.goal]
    if result.plan is not None and result.plan.ok:
        lines += [f"  {i}. {a.name} {' '.join(a.args)}" for i, a in enumerate(result.plan.actions, start=1)]
        lines.append(f"  cost {result.plan.total_cost:g}")
    return _report(args, result, "\n".join(line for line in lines if line))


def _correct(args: argparse.Namespace) -> int:
    from heracles_ros.mirror.corrections import operator_name

    if _live(args):
        return live.correct(args)
    author = f"heracles correct ({operator_name()})"
    result = _request(args, CorrectResult, lambda agent: agent.correct(args.instruction, author=author))
    nothing = f"no change: {result.explanation}" if result.ok else ""
    return _report(args, result, "\n".join([*result.changes, *result.existing]) or nothing)


def _prompt(args: argparse.Namespace) -> int:
    from heracles_ros.agent.prompt import PromptBuilder
    from heracles_ros.agent.tool import ENCODING, token_counting_exact
    from heracles_ros.graphdb import open_store

    with open_store(args.db, graph=args.graph) as store:
        builder = PromptBuilder(store, max_tool_calls=args.max_tool_calls)
        prompt = builder.build(args.task, args.input, method=args.method, answer_type=args.answer_type)
        if not args.stats:
            for message in prompt.messages():
                print(f"----- {message.role} -----\n{message.content}")
            return 0
        components = prompt.token_stats()
        total = components.pop("total")
        stats: dict[str, Any] = {
            "task": args.task,
            "method": args.method,
            "tokenizer": ENCODING if token_counting_exact() else "estimate (4 characters per token)",
            "components": components,
            "total": total,
        }
        if args.method != "context" and args.task != "correct":
            context = builder.build(args.task, args.input, method="context", answer_type=args.answer_type)
            context_stats = context.token_stats()
            stats["context_window_scene"] = context_stats["interface"]
            stats["context_window_total"] = context_stats["total"]
    if args.json:
        print_json(stats)
        return 0
    print(f"{args.task} prompt, {args.method} method ({stats['tokenizer']} tokens)")
    for name, tokens in stats["components"].items():
        print(f"  {name:<14} {tokens:>9,}")
    print(f"  {'total':<14} {stats['total']:>9,}")
    if "context_window_total" in stats:
        print(f"context-window prompt (whole scene in the prompt): {stats['context_window_total']:,} tokens "
              f"({stats['context_window_scene']:,} for the scene)")
    return 0


# --- helpers --------------------------------------------------------------------------
R = TypeVar("R", AskResult, CommandResult, CorrectResult)


def _request(args: argparse.Namespace, result_type: type[R], run: Callable[[Any], R]) -> R:
    """Build the model adapter, store and agent, run one request; set-up failures become the result's error."""
    from heracles_ros.agent.factory import make_llm
    from heracles_ros.agent.llm import LLMSettings
    from heracles_ros.agent.loop import Agent
    from heracles_ros.agent.settings import AgentSettings
    from heracles_ros.graphdb import open_store

    stack = contextlib.ExitStack()
    try:
        try:
            settings = LLMSettings(provider=args.llm, model=args.model, timeout_s=args.timeout,
                                   max_tool_calls=args.max_tool_calls, base_url=args.base_url)
            llm = make_llm(settings)
            stack.callback(llm.close)
            store = stack.enter_context(open_store(args.db, graph=args.graph))
            query_store = stack.enter_context(open_store(args.db, graph=args.graph, read_replica=True))
            agent = Agent(store, llm, AgentSettings(method=args.method), query_store=query_store)
        except HeraclesError as exc:
            return result_type(error=describe(exc))
        return run(agent)
    finally:
        stack.close()


def _report(args: argparse.Namespace, result: Any, text: str) -> int:
    clarification = getattr(result, "clarification", "")
    if args.json:
        print_json(result.to_dict())
    else:
        if clarification:
            text = "\n".join([clarification, *(f"  - {c.description}" for c in result.candidates)])
        if text:
            print(text)
        if result.explanation:
            print(f"({result.explanation})", file=sys.stderr)
        usage = result.usage
        print(f"{usage.tool_calls} queries, {usage.input_tokens} tokens in, {usage.output_tokens} out, "
              f"{usage.latency_s:.1f} s", file=sys.stderr)
        if result.error:
            print(f"error: {result.error}", file=sys.stderr)
    if not result.ok:
        return 1
    return EXIT_CLARIFY if clarification else 0
