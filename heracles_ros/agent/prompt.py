"""The agent's prompt, assembled per request from live facts.

Components follow the reference paper's skeleton (appendix E): role, scene-graph
ontology, class names, interface description, PDDL domain (commands), in-context
examples, the request, answer-format guidance. What can go stale is generated:
labels, relationship patterns, property keys and class names come from the
database (:mod:`.schema_facts`), the Cypher notes from the backend's dialect,
when to use which tool from the tool table (:mod:`.toolbox`),
the predicates from ``data/domain.pddl``, the answer syntax from the SLDP
module. Each component is named so ``heracles prompt --stats`` can show what
it costs in tokens. The database's description is :mod:`.database_text`'s, the
context-window baseline's scene text :mod:`.scene_context`'s.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from heracles_ros.agent.database_text import classes_text, interface_text
from heracles_ros.agent.find_tool import FIND_TOOL_NAME
from heracles_ros.agent.llm import Message
from heracles_ros.agent.scene_context import serialize_scene
from heracles_ros.agent.schema_facts import FactsCache
from heracles_ros.agent.time_tool import TIME_TOOL_NAME
from heracles_ros.agent.tool import TOOL_NAME, count_tokens
from heracles_ros.domain import TYPE_DESCRIPTIONS, Domain, load_domain
from heracles_ros.errors import ConfigError
from heracles_ros.formats.sldp_guidance import format_guidance
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.schema import CORRECTABLE_PROPERTIES, Dialect

TASKS = ("ask", "command", "correct")
METHODS = ("agentic", "single", "context")

@dataclass(frozen=True)
class Component:
    name: str
    text: str
    #: "system" components form the instructions; "user" ones the request message.
    role: Literal["system", "user"] = "system"


@dataclass(frozen=True)
class Prompt:
    task: str
    method: str
    components: tuple[Component, ...]

    def component(self, name: str) -> Component:
        for component in self.components:
            if component.name == name:
                return component
        raise KeyError(name)

    def messages(self) -> list[Message]:
        """One system message with the instructions, one user message with the request."""
        system = "\n\n".join(c.text for c in self.components if c.role == "system")
        user = "\n\n".join(c.text for c in self.components if c.role == "user")
        return [Message("system", system), Message("user", user)]

    def token_stats(self) -> dict[str, int]:
        """Tokens per component (cl100k), plus ``total`` for the whole prompt as sent."""
        stats = {c.name: count_tokens(c.text) for c in self.components}
        stats["total"] = sum(count_tokens(m.content) for m in self.messages())
        return stats


class PromptBuilder:
    """Builds prompts for one store; live facts are cached per mirror generation."""

    def __init__(
        self,
        store: GraphStore,
        *,
        domain: Domain | None = None,
        max_tool_calls: int = 5,
        result_token_budget: int = 2000,
        facts: FactsCache | None = None,
    ):
        self.store = store
        self.max_tool_calls = max_tool_calls
        self.result_token_budget = result_token_budget
        self.facts = facts or FactsCache(store)
        self._domain = domain
        self._scene: tuple[int, str] | None = None

    @property
    def domain(self) -> Domain:
        if self._domain is None:
            self._domain = load_domain()
        return self._domain

    def build(self, task: str, request: str = "", *, method: str = "agentic", answer_type: str | None = None) -> Prompt:
        if task not in TASKS:
            raise ConfigError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
        if method not in METHODS:
            raise ConfigError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
        if task == "correct" and method == "context":
            raise ConfigError("corrections need the database tool; the context method cannot make them")
        facts = self.facts.get()
        dialect = self.store.dialect
        parts = [
            Component("role", _role(task, method, self.max_tool_calls)),
            Component("ontology", ONTOLOGY),
            Component("classes", classes_text(facts)),
        ]
        if method == "context":
            parts.append(Component("interface", self._scene_text(facts.generation)))
        else:
            parts.append(Component("interface", interface_text(facts, dialect, self.result_token_budget,
                                                               time_tool=method == "agentic")))
        if method == "agentic":
            parts.append(Component("tools", tools_text(task)))
        if task == "command":
            parts.append(Component("pddl_domain", pddl_text(self.domain)))
        if task == "correct":
            parts.append(Component("corrections", CORRECTIONS))
        parts.append(Component("examples", examples_text(task, method, dialect)))
        parts.append(Component("request", f"{_REQUEST_LABEL[task]}: {request}", "user"))
        parts.append(Component("answer_format", answer_format_text(task, answer_type), "user"))
        parts.append(Component("clarify", clarify_text(task), "user"))
        return Prompt(task, method, tuple(parts))

    def _scene_text(self, generation: int | None) -> str:
        """The serialised scene, re-read only when the mirror generation changed."""
        if generation is not None and self._scene is not None and self._scene[0] == generation:
            return self._scene[1]
        text = serialize_scene(self.store)
        if generation is not None:
            self._scene = (generation, text)
        return text


# --- role -------------------------------------------------------------------------
_EXPERT = {
    "ask": "answering questions about a robot's world from its 3D scene graph",
    "command": "assigning robots PDDL planning goals based on natural language commands grounded in 3D scene graphs",
    "correct": "keeping a robot's 3D scene graph true to what its operator reports",
}
_GOAL = {
    "ask": "answer the question",
    "command": "write a PDDL goal over the scene-graph symbols the command refers to",
    "correct": "find the node(s) the operator means and propose the correction as property updates, or add the "
               "object the operator says is there",
}
_REQUEST_LABEL = {"ask": "Question", "command": "Instruction", "correct": "Correction"}


def _role(task: str, method: str, max_tool_calls: int) -> str:
    head = f"You are a helpful assistant who is an expert at {_EXPERT[task]}."
    if method == "context":
        return (
            f"{head} The robot's 3D scene graph is given below as text. Use it to {_GOAL[task]}. "
            "When producing a final answer, follow the format and be concise."
        )
    if method == "single":
        how = (
            f"You may run exactly one Cypher query with the tool {TOOL_NAME}: write one query that returns "
            f"everything you need, then use its result to {_GOAL[task]}."
        )
    else:
        how = (
            f"Query the information you need with your tools ({TOOL_NAME}, {FIND_TOOL_NAME}, {TIME_TOOL_NAME}), "
            f"then use it to {_GOAL[task]}. You can call the tools up to {max_tool_calls} times in all; explain "
            "your reasoning briefly before each call."
        )
    return (
        f"{head} You have access to a graph database holding the robot's 3D scene graph, which stores spatial "
        f"information the robot uses to understand the world. {how} Counts, distances and symbols must come "
        "from query results, never from guesses. When producing a final answer, follow the format and be concise."
    )


# --- tools (agentic) ---------------------------------------------------------------
def tools_text(task: str) -> str:
    """When to use which tool: one short paragraph each (the agentic method offers all three)."""
    goals = (
        " Goals are about the scene now: a goal names only nodes in the scene now, never a past state; when an "
        "instruction asks for one (\"go where the box was an hour ago\"), ask back." if task == "command" else ""
    )
    return "\n".join([
        "<tools>",
        f"- {TOOL_NAME}: read-only Cypher over the database described above: counts, distances, containment, "
        "what changed (the history's entries).",
        f"- {FIND_TOOL_NAME}: when the operator's words are not a class listed above (a synonym, a kind, a "
        "description of use: \"something to sit on\", \"a lorry\"), call it with those words first: it returns "
        "the objects they most likely mean, best first, with class, position and room. Then query or answer with "
        "those symbols; an 'uncertain' note means a weak match: check it, or ask back.",
        f"- {TIME_TOOL_NAME}: the past. Give a time ('10m' ago, an ISO time, epoch seconds, or 'now') and a "
        "symbol (where it was then, whether it was there, when it was last seen) or a class / room (the objects "
        "there then). Answer \"where was\" with a POINT, \"when did you last see\" with the time (epoch seconds), "
        f"\"what changed in\" a room with the symbols.{goals}",
        "</tools>",
    ])


# --- ontology ---------------------------------------------------------------------
ONTOLOGY = "\n".join(
    [
        "<scene_graph>",
        "A 3D scene graph is a hierarchical graph of layers that each contain nodes. Every node has a unique, "
        "case-sensitive symbol, a letter and a number (P3 and p3 are different nodes). A node's layer is its "
        "label, not its symbol's letter; the usual letters are given below:",
        "- Objects (label Object, usually O<n>): things in the world, each with a semantic class (type) and a "
        "position. An object the operator added rather than the robot perceived is A<n>, with source 'operator': "
        "say so when you mention one.",
        "- Mesh places (label MeshPlace, usually P<n> or Q<n>; the 2D places layer): patches of ground the robot "
        "can move to, possibly with a semantic class. A node of this layer is a 'Mesh Place', not a 'Place'.",
        "- Places (label Place, usually p<n>; the 3D places layer): regions of free space the robot can reach. "
        "A node of this layer is a 'Place', not a 'Mesh Place'.",
        "- Rooms (label Room, usually R<n>): rooms indoors, regions outdoors (e.g. a road or a parking lot), each "
        "with a semantic class (often the room's name).",
        "- Buildings (label Building, usually B<n>): the top of the hierarchy.",
        "A graph may have mesh places, places, or both. Higher layers contain lower ones: a building contains rooms, "
        "a room contains places and mesh places, a place or mesh place contains objects. Real graphs are incomplete: "
        "some objects have no parent place and some places have no room, so follow containment transitively to find "
        "everything inside a room. Nodes of one layer that are next to each other are connected within the layer "
        "(e.g. mesh places the robot can walk between). Positions are x, y, z in metres in the map frame, z up.",
        "</scene_graph>",
    ]
)


# --- PDDL domain ------------------------------------------------------------------
def pddl_text(domain: Domain) -> str:
    kinds = sorted({kind for info in domain.goal_predicates.values() for kind in info.param_types})
    lines = [
        "<pddl_domain>",
        "A goal is built from these predicates, parameterized by scene-graph symbols "
        f"({'; '.join(f'{kind} is {TYPE_DESCRIPTIONS[kind]}' for kind in kinds)}):",
    ]
    lines += [f"- {info.signature}: {info.comment}" for info in domain.goal_predicates.values()]
    lines += [
        "The 'at' predicates (at-place, at-object, in-room) hold at the end; the 'visited' ones at some point. "
        "When an instruction gives an order, use 'at' / 'in' for the final step and 'visited' for the earlier ones. "
        "Use holding to pick something up; to move an object somewhere use object-in-place, not holding.",
        "Compose predicates with (and ...), (or ...) and (not ...). "
        "For example (and (visited-room R1) (not (visited-room R2))) means visit R1 without entering R2. "
        "If an instruction is not specific about which object, place or room it "
        "means, you MUST use (or ...) over every candidate so the planner can choose.",
        "</pddl_domain>",
    ]
    return "\n".join(lines)


CORRECTIONS = (
    "<corrections>\n"
    "A correction changes properties of nodes that already exist. Only these properties can be corrected: "
    + ", ".join(f"{name} ({'number' if kind is float else 'text'})" for name, kind in CORRECTABLE_PROPERTIES.items())
    + ". A correction touches few nodes; nodes and relationships cannot be deleted. "
    "Propose the smallest change that makes the operator's statement true, and only for nodes your queries found. "
    "When the operator says something exists that the scene graph lacks (\"there is a fire hydrant two metres "
    "north of the rock\"), find the node the statement refers to, work out the position from it (x, y, z in "
    "metres; +y is north, +x east) and propose an addition "
    '{"add": "fire hydrant", "at": [x, y, z], "near": "O12"} in the same list: "add" is the class, "near" the '
    "referent's symbol (leave it out when the statement names none). The system checks every addition (it must be "
    "near the referent and within the mapped area), gives it a new symbol, links it to its place and room, and "
    "answers that it exists already when an object of that class stands there. Do not add what the graph has. "
    "If nothing in the scene graph matches the statement, answer with an empty list [] and say why.\n"
    "</corrections>"
)


# --- examples ---------------------------------------------------------------------
@dataclass(frozen=True)
class Example:
    request: str
    answer: str
    query: str = ""
    result: str = ""


def ask_examples(dialect: Dialect) -> list[Example]:
    distance = dialect.distance_expr("b", "c")
    return [
        Example(
            "How many bags are in the lounge?",
            "2",
            "MATCH (r:Room {class: 'lounge'})-[:CONTAINS*]->(o:Object {class: 'bag'}) RETURN count(DISTINCT o) AS bags",
            '[{"bags":2}]',
        ),
        Example(
            "Which box is closest to the bicycle?",
            "O12",
            "MATCH (b:Object {class: 'box'}), (c:Object {class: 'bicycle'}) "
            f"RETURN b.nodeSymbol AS box, {distance} AS d ORDER BY d LIMIT 3",
            '[{"box":"O12","d":1.8},\n{"box":"O3","d":4.2},\n{"box":"O7","d":6.5}]',
        ),
        Example(
            "How many of each object type are there?",
            '{bag: 2, box: 3, "trash can": 1}',
            "MATCH (o:Object) RETURN o.class AS class, count(o) AS n",
            '[{"class":"box","n":3},\n{"class":"bag","n":2},\n{"class":"trash can","n":1}]',
        ),
        Example(
            "Where are the trash cans?",
            "<POINT(1.2 -3.4 0.1), POINT(5 2.25 0.3)>",
            "MATCH (o:Object {class: 'trash can'}) RETURN o.x AS x, o.y AS y, o.z AS z",
            '[{"x":1.2,"y":-3.4,"z":0.1},\n{"x":5,"y":2.25,"z":0.3}]',
        ),
        Example(
            "Which rooms are next to the kitchen?",
            "<R2, R5>",
            "MATCH (:Room {class: 'kitchen'})-[:ROOM_CONNECTED]-(r:Room) RETURN DISTINCT r.nodeSymbol AS room",
            '[{"room":"R2"},\n{"room":"R5"}]',
        ),
    ]


def command_examples() -> list[Example]:
    """The reference paper's in-context examples (symbols as a query would have found them)."""
    return [
        Example("Head to mesh place 100.", "(visited-place P100)"),
        Example("Move over to the trash can.", "(visited-object O15)"),
        Example("Go to room 1.", "(visited-room R1)"),
        Example("Inspect the trash can.", "(safe O15)"),
        Example(
            "Pick up the box.",
            "(holding O120)",
            "MATCH (o:Object {class: 'box'}) RETURN o.nodeSymbol AS box",
            '[{"box":"O120"}]',
        ),
        Example("Move the box to mesh place 11.", "(object-in-place O120 P11)"),
        Example("First pick up the box and then head over to the trash can.", "(and (holding O120) (at-object O15))"),
        Example(
            "Move to one of the poles on the sidewalk.",
            "(or (visited-object O155) (visited-object O160) (visited-object O185))",
        ),
        Example("Go pick up one of the poles on the sidewalk.", "(or (holding O155) (holding O160) (holding O185))"),
        Example("Visit the hallway without going into the lounge.", "(and (visited-room R2) (not (visited-room R1)))"),
    ]


def correct_examples() -> list[Example]:
    return [
        Example(
            "That bicycle is actually a bag.",
            '[["O43", "class", "bag"]]',
            "MATCH (o:Object {class: 'bicycle'}) RETURN o.nodeSymbol AS id, o.x AS x, o.y AS y",
            '[{"id":"O43","x":3.1,"y":-2}]',
        ),
        Example(
            "The chair in the kitchen really stands at x 2.5, y 1.",
            '[["O7", "x", 2.5], ["O7", "y", 1.0]]',
            "MATCH (:Room {class: 'kitchen'})-[:CONTAINS*]->(o:Object {class: 'chair'}) RETURN o.nodeSymbol AS id",
            '[{"id":"O7"}]',
        ),
        Example(
            "There is a fire hydrant about two metres north of the rock.",
            '[{"add": "fire hydrant", "at": [12.4, 7.0, 0.4], "near": "O88"}]',
            "MATCH (o:Object {class: 'rock'}) RETURN o.nodeSymbol AS id, o.x AS x, o.y AS y, o.z AS z",
            '[{"id":"O88","x":12.4,"y":5.0,"z":0.4}]',
        ),
    ]


def examples_text(task: str, method: str, dialect: Dialect) -> str:
    examples = {"ask": ask_examples(dialect), "command": command_examples(), "correct": correct_examples()}[task]
    label = _REQUEST_LABEL[task]
    with_queries = method != "context"
    intro = "Examples of requests and final answers"
    intro += " (with a query that finds the information, and its result)." if with_queries else "."
    lines = ["<examples>", intro]
    for example in examples:
        lines.append(f"{label}: {example.request}")
        if with_queries and example.query:
            lines.append(f"Query: {example.query}")
            lines.append(f"Result: {example.result}")
        lines.append(f"Answer: <answer>{example.answer}</answer>")
    lines.append("</examples>")
    return "\n".join(lines)


def answer_format_text(task: str, answer_type: str | None) -> str:
    tags = "Give your final answer (not your queries) between <answer> and </answer> tags, one pair only."
    if task == "ask":
        return f"{format_guidance(answer_type)}\n{tags} For example <answer><O1, O2></answer>."
    if task == "command":
        return (
            f"{tags} Write the PDDL goal with symbols exactly as stored in nodeSymbol, e.g. "
            "<answer>(visited-object O1)</answer>. Make your answer as concise as possible."
        )
    return (
        f"{tags} Write the changes as a JSON list of [symbol, property, value] triples and additions, e.g. "
        '<answer>[["O43", "class", "bag"]]</answer> or '
        '<answer>[{"add": "fire hydrant", "at": [12.4, 7.0, 0.4], "near": "O88"}]</answer>; x, y, z take numbers. '
        "If the statement matches no node, answer <answer>[]</answer> and say why."
    )


# --- asking back ----------------------------------------------------------------------
def clarify_text(task: str) -> str:
    """When to ask the operator back instead of guessing, and how (SLDP's CLARIFY answer kind)."""
    either = "several, and the instruction does not say any one of them will do" if task == "command" else "several"
    lines = [
        "If the request refers to something the scene graph does not pin down (it could mean "
        f"{either}; or nothing matches), do not guess: ask back. Answer "
        '<answer>CLARIFY("your question", <O3, O7>)</answer> with a short question for the operator and the set of '
        "candidate symbols exactly as stored in nodeSymbol (<> when nothing matches). The operator is shown each "
        "candidate's class, room and distance to the robot, and replies in the same conversation.",
    ]
    if task == "command":
        lines.append(
            "When nothing matches because the map has no such thing, name it as a third field, so the operator can "
            'send the robot to look for it: <answer>CLARIFY("The map has no fire extinguisher; search for one?", <>, '
            '"fire extinguisher")</answer>.'
        )
        lines.append(
            "An instruction that says any one will do (\"any box\", \"one of the boxes\", \"a box\") is not "
            "ambiguous: write an or goal over the matches instead."
        )
    lines.append(
        "Earlier exchanges of this conversation, if any, come before the request: use them to resolve words like "
        "\"it\" or \"that one\", and to read the operator's reply to your question."
    )
    return "\n".join(lines)
