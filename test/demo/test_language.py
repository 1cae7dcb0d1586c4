"""Which language model the demo uses, from options and the environment (nothing is contacted)."""
from __future__ import annotations

import pytest

from heracles_ros.demo.language import HOW_TO_ENABLE, choose_language_model
from heracles_ros.errors import ConfigError

OLLAMA = "http://127.0.0.1:11434"
LOCAL = "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize(
    ("llm", "base_url", "env", "expected"),
    [
        (None, None, {}, None),
        (None, None, {"OPENAI_API_KEY": "k"}, ("openai", "", "OPENAI_API_KEY is set")),
        (None, None, {"OLLAMA_HOST": OLLAMA}, ("ollama", OLLAMA, "OLLAMA_HOST is set")),
        (None, LOCAL, {}, ("openai", LOCAL, "--base-url given")),
        # An explicit provider wins over whatever the environment suggests.
        ("ollama", None, {"OPENAI_API_KEY": "k"}, ("ollama", "", "--llm ollama")),
        ("openai", LOCAL, {"OLLAMA_HOST": "h"}, ("openai", LOCAL, "--llm openai")),
        # The OpenAI key outranks an Ollama host when neither is asked for by name.
        (None, None, {"OPENAI_API_KEY": "k", "OLLAMA_HOST": "h"}, ("openai", "", "OPENAI_API_KEY is set")),
    ],
)
def test_the_configured_model_is_chosen(llm, base_url, env, expected):
    choice = choose_language_model(llm, "m", base_url, env)
    if expected is None:
        assert choice is None
    else:
        assert choice is not None
        assert (choice.provider, choice.base_url, choice.reason) == expected
        assert choice.model == "m"


def test_the_key_itself_never_shows_in_the_description():
    choice = choose_language_model(None, None, None, {"OPENAI_API_KEY": "sk-secret-value"})
    assert choice is not None and "sk-secret-value" not in choice.description


@pytest.mark.parametrize(("llm", "message"), [
    ("openai", "--llm openai needs OPENAI_API_KEY"),
    ("claude", "unknown --llm 'claude'"),
])
def test_impossible_choices_fail_naming_the_option(llm, message):
    with pytest.raises(ConfigError, match=message):
        choose_language_model(llm, None, None, {})


def test_how_to_enable_names_every_way_in():
    for needle in ("OPENAI_API_KEY", "--llm ollama", "OLLAMA_HOST", "--base-url"):
        assert needle in HOW_TO_ENABLE
