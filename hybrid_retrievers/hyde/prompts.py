"""HyDE prompt templates, and how a prompt is rendered for one query.

A prompt is a name from `HYDE_PROMPTS`, a template with a ``{query}`` placeholder, a
callable ``query -> str``, or ``None``: the generator receives the query itself and
formats its own prompt (a framework chain that carries its template, as LangChain's
`HypotheticalDocumentEmbedder` and LlamaIndex's `HyDEQueryTransform` do). Only
``{query}`` is substituted, so other braces in a template stay as written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["HYDE_PROMPTS", "Prompt", "check_prompt", "prompt_label", "render_prompt"]

Prompt = str | Callable[[str], str] | None
"""A template name, a template with ``{query}``, a callable ``query -> str``, or ``None``
(the generator gets the query as it is)."""

HYDE_PROMPTS: Mapping[str, str] = {
    # The first seven follow the instructions of Gao et al. 2022 (their Table 6 prompts;
    # "multilingual" is their Mr.TyDi prompt, which names the language of each run).
    "web": "Please write a passage to answer the question.\nQuestion: {query}\nPassage:",
    "scientific": (
        "Please write a scientific paper passage to answer the question.\n"
        "Question: {query}\nPassage:"
    ),
    "claim": (
        "Please write a scientific paper passage to support/refute the claim.\n"
        "Claim: {query}\nPassage:"
    ),
    "financial": (
        "Please write a financial article passage to answer the question.\n"
        "Question: {query}\nPassage:"
    ),
    "news": "Please write a news passage about the topic.\nTopic: {query}\nPassage:",
    "argument": (
        "Please write a counter argument for the passage.\nPassage: {query}\n"
        "Counter Argument:"
    ),
    "multilingual": (
        "Please write a passage in the language of the question to answer the question "
        "in detail.\nQuestion: {query}\nPassage:"
    ),
    "legal": (
        "Please write a passage from a statute, regulation or court decision that answers "
        "the question, in formal legal language.\nQuestion: {query}\nPassage:"
    ),
    "technical": (
        "Please write a passage from technical documentation (a manual, a specification "
        "or an engineering report) that answers the question, using the precise terms "
        "of the field.\nQuestion: {query}\nPassage:"
    ),
    "biomedical": (
        "Please write a passage from a biomedical research article that answers the "
        "question.\nQuestion: {query}\nPassage:"
    ),
}
"""Built-in prompt templates by name; ``{query}`` is replaced by the query."""


def render_prompt(prompt: Prompt, query: str) -> str:
    """The prompt text for ``query``: a template name, a template with ``{query}``, a
    callable, or ``None`` (the query itself: the generator formats its own prompt).

    Only the ``{query}`` placeholder is substituted (other braces stay as written).

    Example:
        >>> render_prompt("Answer: {query}", "what is lift?")
        'Answer: what is lift?'
    """
    if prompt is None:
        return query
    if callable(prompt):
        text = prompt(query)
        if not isinstance(text, str):
            raise TypeError(f"a prompt callable must return a str, got {type(text).__name__}")
        return text
    template = HYDE_PROMPTS.get(prompt, prompt)
    return template.replace("{query}", query)


def check_prompt(prompt: Any) -> Prompt:
    """``prompt`` if it is a built-in name, a template with ``{query}``, a callable or ``None``.

    Raises:
        TypeError: for anything else than a str or a callable.
        ValueError: for a str that is neither a built-in name nor contains ``{query}``.
    """
    if prompt is None or callable(prompt):
        return prompt  # type: ignore[no-any-return]
    if not isinstance(prompt, str):
        raise TypeError(
            f"prompt must be a template name {sorted(HYDE_PROMPTS)}, a template str with "
            f"'{{query}}', a callable(query) -> str or None, got {type(prompt).__name__}"
        )
    if prompt not in HYDE_PROMPTS and "{query}" not in prompt:
        raise ValueError(
            f"prompt must be one of {sorted(HYDE_PROMPTS)} or a template containing "
            f"'{{query}}', got {prompt!r:.80}"
        )
    return prompt


def prompt_label(prompt: Prompt) -> str:
    """A short name for ``prompt`` in reprs: the built-in name, ``"the generator's"`` for
    ``None``, else ``"custom"``."""
    if prompt is None:
        return "the generator's"
    return prompt if isinstance(prompt, str) and prompt in HYDE_PROMPTS else "custom"
