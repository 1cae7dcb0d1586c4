"""Build the adapter a settings object names (so callers never import a provider module)."""
from __future__ import annotations

from heracles_ros.agent.llm import LLM, LLMSettings


def make_llm(settings: LLMSettings) -> LLM:
    """The adapter for ``settings.provider``; raises LLMUnavailable if its SDK is missing."""
    if settings.provider == "ollama":
        from heracles_ros.agent.ollama_llm import OllamaLLM

        return OllamaLLM(settings)
    from heracles_ros.agent.openai_llm import OpenAILLM

    return OpenAILLM(settings)
