"""The prompt is built from live facts of the real database (database_text), the domain file and the dialect; the
context-window baseline holds the whole scene (scene_context)."""
from __future__ import annotations

import re
import time

import pytest

from heracles_ros.agent.database_text import interface_text
from heracles_ros.agent.prompt import PromptBuilder, ask_examples, command_examples, correct_examples
from heracles_ros.agent.scene_context import serialize_scene
from heracles_ros.agent.schema_facts import FactsCache, read_facts
from heracles_ros.agent.tool import count_tokens
from heracles_ros.domain import load_domain
from heracles_ros.errors import ConfigError
from heracles_ros.graphdb.cypher.mirror import BUMP_GENERATION
from heracles_ros.schema import NEO4J


def _classes(store, label):
    return {r["c"] for r in store.query(f"MATCH (n:{label}) RETURN DISTINCT n.class AS c")}


def test_classes_and_schema_come_from_the_database(small_store):
    prompt = PromptBuilder(small_store).build("ask", "How many bags are there?")
    classes = prompt.component("classes").text
    object_line = next(line for line in classes.splitlines() if line.startswith("- Object:"))
    assert set(object_line.removeprefix("- Object: ").split(", ")) == _classes(small_store, "Object")
    room_line = next(line for line in classes.splitlines() if line.startswith("- Room:"))
    assert set(room_line.removeprefix("- Room: ").split(", ")) == _classes(small_store, "Room")
    assert "- MeshPlace:" not in classes  # no labelspace: every mesh place is just "mesh place"

    interface = prompt.component("interface").text
    for label in ("Object", "MeshPlace", "Place", "Room", "Building"):
        count = small_store.query(f"MATCH (n:{label}) RETURN count(n) AS n")[0]["n"]
        assert f"- {label} ({count})" in interface
    assert "MirrorMeta" not in interface and "Correction" not in interface
    rel_types = {r["t"] for r in small_store.query("MATCH ()-[e]->() RETURN DISTINCT type(e) AS t")}
    listed = set(re.findall(r"\[:([A-Z_]+)\]->", interface))
    assert rel_types <= listed
    assert "(:Room)-[:CONTAINS]->(:MeshPlace)" in interface
    assert "bbox_dim" in interface and "bbox_center" in interface  # property keys read from the nodes


def test_new_class_appears_after_the_generation_bump(small_store):
    builder = PromptBuilder(small_store)
    assert "skateboard" not in builder.build("ask", "q").component("classes").text
    small_store.write("CREATE (:Object {nodeSymbol: 'O900', class: 'skateboard', x: 1.0, y: 2.0, z: 0.0})")
    # Same generation: the cached facts are still used (introspection is not repeated per request).
    assert "skateboard" not in builder.build("ask", "q").component("classes").text
    small_store.write(BUMP_GENERATION, {"sequence": 99, "now": time.time()})
    prompt = builder.build("ask", "q")
    assert "skateboard" in prompt.component("classes").text
    assert "- Object (34)" in prompt.component("interface").text


def test_facts_cache_follows_the_generation(small_store):
    cache = FactsCache(small_store)
    first = cache.get()
    assert cache.get() is first
    small_store.write(BUMP_GENERATION, {"sequence": 1, "now": time.time()})
    second = cache.get()
    assert second is not first and second.generation == (first.generation or 0) + 1
    cache.invalidate()
    assert cache.get() is not second


def test_facts_of_an_empty_graph(store):
    facts = read_facts(store)
    assert facts.labels == () and facts.relationships == ()
    prompt = PromptBuilder(store).build("ask", "anything there?")
    assert "no scene yet" in prompt.component("classes").text


def test_dialect_notes_match_the_backend(small_store):
    interface = PromptBuilder(small_store).build("ask", "q").component("interface").text
    if small_store.dialect == NEO4J:
        assert "Neo4j" in interface and "FalkorDB" not in interface
        assert "point.distance(a.center, b.center)" in interface and "[x, y, z] lists" not in interface
    else:
        assert "FalkorDB" in interface
        assert "point.distance(a.center, b.center)" in interface  # the point library makes it work here
        assert "[x, y, z] lists" in interface and "point({x: ..}) does not work here" in interface
        neo4j = interface_text(read_facts(small_store), NEO4J, 2000)
        assert "point.distance(a.center, b.center)" in neo4j and "[x, y, z] lists" not in neo4j
    # Every Cypher example in the notes runs on this backend.
    for query in re.findall(r"(MATCH p = .*? AS hops)", interface):
        small_store.query(query.replace("'P1'", "'P0'").replace("'P9'", "'P3'"))


def test_example_queries_run_on_the_backend(small_store):
    """In-context examples teach the model Cypher: each must be valid on the backend in use."""
    examples = [*ask_examples(small_store.dialect), *command_examples(), *correct_examples()]
    queries = [e.query for e in examples if e.query]
    assert len(queries) >= 7
    for query in queries:
        small_store.query(query)  # raises QueryError if the example is not valid here
    interface = interface_text(read_facts(small_store), small_store.dialect, 2000)
    hops = re.search(r"(?:Count hops with .*?|Fewest hops between two places): (MATCH .+)$", interface, re.MULTILINE)
    assert hops is not None
    near = small_store.query(
        "MATCH (a:MeshPlace)-[:MESH_PLACE_CONNECTED]-(b:MeshPlace) RETURN a.nodeSymbol AS a, b.nodeSymbol AS b LIMIT 1"
    )[0]
    rows = small_store.query(hops.group(1).replace("'P1'", f"'{near['a']}'").replace("'P9'", f"'{near['b']}'"))
    assert rows[0]["hops"] == 1


def test_command_prompt_lists_every_goal_predicate(small_store):
    prompt = PromptBuilder(small_store).build("command", "Pick up the bag.")
    pddl = prompt.component("pddl_domain").text
    for info in load_domain().goal_predicates.values():
        assert info.signature in pddl and info.comment in pddl
    assert "road" not in pddl and "hand-empty" not in pddl  # internal predicates stay out
    assert "pddl_domain" not in [c.name for c in PromptBuilder(small_store).build("ask", "q").components]


def test_answer_format_carries_the_requested_type(small_store):
    builder = PromptBuilder(small_store)
    ask = builder.build("ask", "Which rooms have bags?", answer_type="set[string]")
    assert "must be a set of strings" in ask.component("answer_format").text
    system, user = ask.messages()
    assert (system.role, user.role) == ("system", "user")
    assert user.content.startswith("Question: Which rooms have bags?")
    assert "<answer>" in ask.component("answer_format").text
    with pytest.raises(ConfigError, match="unknown SLDP type"):
        builder.build("ask", "q", answer_type="sett")
    correct = builder.build("correct", "That bicycle is a bag.")
    corrections = correct.component("corrections").text
    assert "class (text)" in corrections and "x (number)" in corrections


def test_methods_change_role_and_interface(small_store):
    builder = PromptBuilder(small_store, max_tool_calls=7)
    agentic = builder.build("ask", "q")
    assert "up to 7 times" in agentic.component("role").text
    single = builder.build("ask", "q", method="single")
    assert "exactly one Cypher query" in single.component("role").text
    context = builder.build("ask", "q", method="context")
    assert "run_cypher_query" not in context.component("role").text
    assert "Query:" not in context.component("examples").text
    with pytest.raises(ConfigError):
        builder.build("correct", "q", method="context")
    with pytest.raises(ConfigError):
        builder.build("plan", "q")


def test_context_window_holds_the_whole_scene(small_store):
    text = serialize_scene(small_store)
    for label in ("Object", "MeshPlace", "Place", "Room"):
        for row in small_store.query(f"MATCH (n:{label}) RETURN n.nodeSymbol AS s"):
            assert f"({row['s']}, " in text
    bag = small_store.query(
        "MATCH (p:MeshPlace)-[:CONTAINS]->(o:Object {class: 'bag'}) RETURN o.nodeSymbol AS o, p.nodeSymbol AS p LIMIT 1"
    )[0]
    assert re.search(rf"\({bag['o']}, bag, \([^)]*\), \[{bag['p']}\]\)", text)
    agentic = PromptBuilder(small_store).build("ask", "q").token_stats()
    context = PromptBuilder(small_store).build("ask", "q", method="context").token_stats()
    assert context["interface"] == count_tokens(
        PromptBuilder(small_store).build("ask", "q", method="context").component("interface").text
    )
    assert context["total"] > agentic["total"]


def test_token_stats_cover_every_component(small_store):
    prompt = PromptBuilder(small_store).build("command", "Go to the kitchen.")
    stats = prompt.token_stats()
    assert set(stats) == {c.name for c in prompt.components} | {"total"}
    parts = sum(v for k, v in stats.items() if k != "total")
    assert abs(stats["total"] - parts) <= len(prompt.components) * 2  # joins cost a token or two
    assert 1000 < stats["total"] < 4000


def test_questions_commands_and_corrections_are_told_to_ask_back(small_store):
    builder = PromptBuilder(small_store)
    ask = builder.build("ask", "Which room is the bicycle in?").component("clarify").text
    command = builder.build("command", "Bring the box.").component("clarify").text
    assert 'CLARIFY("your question", <O3, O7>)' in ask and "<> when nothing matches" in ask
    assert "\"it\"" in ask and "or goal" not in ask
    assert "\"any box\"" in command and "write an or goal over the matches" in command
    correct = builder.build("correct", "There is a fire hydrant by the rock.")
    assert "CLARIFY(" in correct.component("clarify").text
    assert '{"add": "fire hydrant", "at": [x, y, z], "near": "O12"}' in correct.component("corrections").text
    # The instructions reach the model in the request's message, after the answer format.
    user = builder.build("ask", "q").messages()[-1].content
    assert user.index("<answer>") < user.index("CLARIFY(")
