"""Strict validation of chat-completion requests at the model gateway.

Every field the gateway accepts is checked for type and range, and unknown fields are
refused, so that no request can be served for free (content the token count does not see),
crash the backend (non-integer `max_tokens`) or reserve an unbounded amount (huge `n`).
Portable: standard library and sibling modules only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .simulator import MAX_N, count_tokens

MAX_COMPLETION_TOKENS = 16_384  # per choice
DEFAULT_MAX_TOKENS = 4_096  # per choice, when the request gives no limit
MAX_MESSAGES = 256
MAX_STOP = 4
ROLES = frozenset({"system", "developer", "user", "assistant"})
MESSAGE_KEYS = frozenset({"role", "content", "name"})
FIELDS = frozenset({"model", "messages", "n", "max_tokens", "max_completion_tokens",
                    "temperature", "top_p", "seed", "stop", "presence_penalty",
                    "frequency_penalty", "stream", "user"})


class InvalidRequest(ValueError):
    """A request the gateway refuses with HTTP 400 and this message."""


@dataclass(frozen=True)
class ChatRequest:
    """A validated request: the body to forward and what its budget reservation needs."""

    body: dict[str, Any]
    prompt_tokens: int
    n: int
    max_tokens: int  # per choice, as asked (or the default)
    limit_key: str  # "max_tokens" or "max_completion_tokens"

    def with_max_tokens(self, max_tokens: int) -> dict[str, Any]:
        """The body to serve, its completion limit set to what was reserved."""
        return {**self.body, self.limit_key: max_tokens}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(float(value))  # type: ignore[arg-type]


def _int_field(body: Mapping[str, Any], key: str, lo: int, hi: int) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if not _is_int(value) or not lo <= value <= hi:
        raise InvalidRequest(f"{key} must be an integer from {lo} to {hi}")
    return int(value)


def _number_field(body: Mapping[str, Any], key: str, lo: float, hi: float) -> None:
    value = body.get(key)
    if value is not None and (not _is_number(value) or not lo <= value <= hi):
        raise InvalidRequest(f"{key} must be a number from {lo:g} to {hi:g}")


def _messages(value: object) -> str:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_MESSAGES:
        raise InvalidRequest(f"messages must be a list of 1 to {MAX_MESSAGES} messages")
    texts = []
    for i, message in enumerate(value):
        if not isinstance(message, dict) or not set(message) <= MESSAGE_KEYS:
            raise InvalidRequest(f"messages[{i}] must be an object with role, content "
                                 "(and optionally name)")
        if message.get("role") not in ROLES:
            raise InvalidRequest(f"messages[{i}].role must be one of {sorted(ROLES)}")
        if not isinstance(message.get("content"), str):
            raise InvalidRequest(f"messages[{i}].content must be a string")
        if "name" in message and not isinstance(message["name"], str):
            raise InvalidRequest(f"messages[{i}].name must be a string")
        texts.append(message["content"])
    return "\n".join(texts)


def _stop(value: object) -> None:
    if value is None or isinstance(value, str):
        return
    if (not isinstance(value, list) or len(value) > MAX_STOP
            or not all(isinstance(s, str) for s in value)):
        raise InvalidRequest(f"stop must be a string or a list of at most {MAX_STOP} strings")


def parse_request(body: object) -> ChatRequest:
    """A validated request, or InvalidRequest with a clear message."""
    if not isinstance(body, dict):
        raise InvalidRequest("request body must be a JSON object")
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        raise InvalidRequest(f"unsupported fields: {', '.join(unknown)[:200]}")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise InvalidRequest("model must be a non-empty string")
    text = _messages(body.get("messages"))
    n = _int_field(body, "n", 1, MAX_N) or 1
    if body.get("max_tokens") is not None and body.get("max_completion_tokens") is not None:
        raise InvalidRequest("give max_tokens or max_completion_tokens, not both")
    limit_key = "max_completion_tokens" if body.get("max_completion_tokens") is not None \
        else "max_tokens"
    max_tokens = _int_field(body, limit_key, 1, MAX_COMPLETION_TOKENS) or DEFAULT_MAX_TOKENS
    _number_field(body, "temperature", 0.0, 2.0)
    _number_field(body, "top_p", 0.0, 1.0)
    _number_field(body, "presence_penalty", -2.0, 2.0)
    _number_field(body, "frequency_penalty", -2.0, 2.0)
    _int_field(body, "seed", -(2**63), 2**63 - 1)
    _stop(body.get("stop"))
    if body.get("stream") is not None and not isinstance(body["stream"], bool):
        raise InvalidRequest("stream must be a boolean")
    if body.get("stream"):
        raise InvalidRequest("streaming is not supported")
    if body.get("user") is not None and not isinstance(body["user"], str):
        raise InvalidRequest("user must be a string")
    return ChatRequest(body, count_tokens(text), n, max_tokens, limit_key)
