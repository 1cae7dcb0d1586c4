"""The language server's parameters: its table and its typed settings, with the library's objects built from them
(the model's settings, the agent's, the bounds on additions, the word vectors). API keys come only from the
environment."""
from __future__ import annotations

from dataclasses import dataclass

from heracles_ros.agent.llm import PROVIDERS, LLMSettings
from heracles_ros.agent.prompt import METHODS
from heracles_ros.agent.settings import AgentSettings
from heracles_ros.errors import ConfigError
from heracles_ros.meaning.embeddings import KINDS as EMBEDDINGS
from heracles_ros.meaning.embeddings import CachedEmbedder, open_embedder
from heracles_ros.mirror.additions import AdditionSettings
from heracles_ros.ros.node_settings import (
    ADDITION_MERGE_RADIUS,
    CLIENT_LOST,
    COMMON,
    INSTANCE_CHECK,
    MAP_FRAME,
    PLANNER_TIMEOUT,
    ROBOT_SYMBOL,
    SNAPSHOT_WAIT,
    NodeSettings,
)
from heracles_ros.settings import Setting

PARAMETERS: tuple[Setting, ...] = (
    *COMMON,
    ROBOT_SYMBOL,
    Setting("llm", "openai", "Language model provider: openai (key from OPENAI_API_KEY) or ollama",
            choices=PROVIDERS),
    Setting("model", "", "Model name; '' = the provider's default (gpt-4.1 / qwen3:32b)"),
    Setting("base_url", "", "OpenAI-compatible base URL or Ollama host; '' = OPENAI_BASE_URL / OLLAMA_HOST / "
            "the provider's default"),
    Setting("temperature", 0.0, "Sampling temperature of the model", minimum=0.0, maximum=2.0),
    Setting("llm_timeout_s", 120.0, "Time limit of one model call, seconds", minimum=0.1),
    Setting("request_timeout_s", 240.0, "Time limit of a whole request (all model turns and queries), seconds",
            minimum=0.1),
    Setting("max_tool_calls", 5, "Tool calls the model may make per request (Cypher queries, find_objects and "
            "scene_at together)", minimum=0, maximum=50),
    Setting("method", "agentic", "agentic (queries as needed) | single (one query) | context (scene in the prompt)",
            choices=METHODS),
    Setting("max_goal_retries", 2, "Times a rejected goal goes back to the model with the checker's problems",
            minimum=0, maximum=10),
    Setting("query_timeout_s", 10.0, "Time limit of each Cypher query the model runs, seconds", minimum=0.1),
    Setting("addition_max_distance_m", 5.0, "An object the operator adds stands at most this far from the node "
            "its statement refers to (near), metres", minimum=0.0, maximum=1000.0),
    Setting("addition_max_place_distance_m", 3.0, "An object the operator adds stands at most this far from a "
            "connected place (the mapped area), metres", minimum=0.0, maximum=1000.0),
    ADDITION_MERGE_RADIUS,
    Setting("addition_max_per_request", 10, "Objects one correction may add; an answer with more is refused",
            minimum=1, maximum=1000),
    SNAPSHOT_WAIT,
    Setting("result_token_budget", 2000, "Tokens of query results the model gets per call (the rest is cut)",
            minimum=50, maximum=1_000_000),
    PLANNER_TIMEOUT,
    MAP_FRAME,
    Setting("request_workers", 4, "Requests answered at once; one more is refused as busy", minimum=1, maximum=64),
    Setting("require_confirmation", False, "execute_command waits for the confirm service before the robot moves "
            "(a goal can also ask for it)"),
    Setting("confirm_timeout_s", 120.0, "How long a command waits for confirmation before it is refused, seconds",
            minimum=0.1),
    Setting("session_exchanges", 6, "Recent exchanges a session keeps for the model", minimum=1, maximum=100),
    Setting("max_sessions", 100, "Sessions kept at once (the least recently used is forgotten)", minimum=1,
            maximum=100_000),
    Setting("embeddings", "wordllama", "Word vectors of find and the model's find_objects: wordllama (offline, "
            "shipped with the package, no network), openai or ollama", choices=EMBEDDINGS),
    Setting("embedding_model", "", "The provider's embedding model, needed for openai / ollama (e.g. "
            "text-embedding-3-small, nomic-embed-text)"),
    Setting("embedding_base_url", "", "OpenAI-compatible base URL or Ollama host of the embeddings; '' = "
            "OPENAI_BASE_URL / OLLAMA_HOST / the provider's default"),
    CLIENT_LOST,
    INSTANCE_CHECK,
)


@dataclass(frozen=True)
class LanguageSettings(NodeSettings):
    """The node's parameters, checked."""

    robot_symbol: str
    llm: str
    model: str
    base_url: str
    temperature: float
    llm_timeout_s: float
    request_timeout_s: float
    max_tool_calls: int
    method: str
    max_goal_retries: int
    query_timeout_s: float
    addition_max_distance_m: float
    addition_max_place_distance_m: float
    addition_merge_radius_m: float
    addition_max_per_request: int
    snapshot_wait_s: float
    result_token_budget: int
    planner_timeout_s: float
    map_frame: str
    request_workers: int
    require_confirmation: bool
    confirm_timeout_s: float
    session_exchanges: int
    max_sessions: int
    embeddings: str
    embedding_model: str
    embedding_base_url: str
    client_lost_s: float
    instance_check_s: float

    def __post_init__(self) -> None:
        """ConfigError naming the parameter for anything the library refuses."""
        for name in ("robot_symbol", "map_frame", "graph_name"):
            if not getattr(self, name).strip():
                raise ConfigError(f"parameter {name} must not be empty")
        if self.embeddings != "wordllama" and not self.embedding_model.strip():
            raise ConfigError(f"parameter embedding_model must name the provider's model when embeddings is "
                              f"{self.embeddings!r} (e.g. text-embedding-3-small, nomic-embed-text)")

    def model_settings(self) -> LLMSettings:
        """How to reach the model."""
        return LLMSettings(
            provider=self.llm,
            model=self.model,
            temperature=self.temperature,
            timeout_s=self.llm_timeout_s,
            max_tool_calls=self.max_tool_calls,
            base_url=self.base_url or None,
        )

    def embedder(self) -> CachedEmbedder:
        """The word vectors ``find`` and ``find_objects`` use (a provider's client is made here, not called)."""
        return open_embedder(self.embeddings, model=self.embedding_model.strip(),
                             base_url=self.embedding_base_url or None)

    def agent_settings(self) -> AgentSettings:
        """How the agent converses."""
        return AgentSettings(
            method=self.method,
            max_goal_retries=self.max_goal_retries,
            additions=AdditionSettings(
                max_distance_m=self.addition_max_distance_m,
                max_place_distance_m=self.addition_max_place_distance_m,
                merge_radius_m=self.addition_merge_radius_m,
                max_per_request=self.addition_max_per_request,
            ),
            query_timeout_s=self.query_timeout_s,
            snapshot_wait_s=self.snapshot_wait_s,
            result_token_budget=self.result_token_budget,
            request_timeout_s=self.request_timeout_s,
            robot_symbol=self.robot_symbol,
        )
