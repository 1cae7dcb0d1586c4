"""How the agent converses, as one typed object: the method, the retries, the limits of its queries.

The language server fills it from its parameters; the CLI, the eval and the tests from their options. The model's
own settings (provider, timeout, the queries one request may run) are :class:`~heracles_ros.agent.llm.LLMSettings`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from heracles_ros.agent.prompt import METHODS
from heracles_ros.errors import ConfigError
from heracles_ros.mirror.additions import AdditionSettings
from heracles_ros.mirror.corrections import MAX_NODES
from heracles_ros.mirror.snapshot_reads import DEFAULT_WAIT_S
from heracles_ros.schema import ROBOT_SYMBOL


@dataclass(frozen=True)
class AgentSettings:
    """One agent's policy; the defaults are the language server's parameters' defaults."""

    #: agentic (queries as needed), single (one query) or context (the scene in the prompt).
    method: str = "agentic"
    #: Times a rejected final answer goes back to the model with the problems, by kind of answer.
    max_answer_retries: int = 1
    max_goal_retries: int = 2
    max_correction_retries: int = 1
    #: Most nodes one correction may change.
    correction_max_nodes: int = MAX_NODES
    #: Bounds on what a correction may add.
    additions: AdditionSettings = field(default_factory=AdditionSettings)
    #: Time limit of each Cypher query the model runs, seconds.
    query_timeout_s: float = 10.0
    #: How long a query waits for a mirror update in progress to end, seconds.
    snapshot_wait_s: float = DEFAULT_WAIT_S
    #: Tokens of query results the model gets per call (the rest is cut).
    result_token_budget: int = 2000
    #: Time limit of a whole request, seconds (None: only each model call's and query's own).
    request_timeout_s: float | None = None
    #: nodeSymbol of the robot's node (a clarification's candidates are described by their distance to it).
    robot_symbol: str = ROBOT_SYMBOL

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"unknown agent method {self.method!r}; choose one of {', '.join(METHODS)}")

    @property
    def retries(self) -> dict[str, int]:
        """Retries left to one request, by the kind of answer rejected (answer, goal, correction)."""
        return {"answer": self.max_answer_retries, "goal": self.max_goal_retries,
                "correction": self.max_correction_retries}
