"""What a run's model calls cost: tokens per model (an Inspect sample's usage records) and
dollars from a price table the user keeps. The project ships no prices: a model absent
from the table has tokens but no dollars, and the run says which models were unpriced.

The table (core.paths.prices_file: $REBENCH_PRICES or <cache>/prices.json), dollars per
million tokens:

    {"models": {"openai/gpt-4o": {"input": 2.5, "output": 10.0,
                                  "cache_read": 1.25, "cache_write": 3.75}}}

`input` prices the tokens charged at the full rate (Inspect's `input_tokens`, which leave
out cache reads and writes); a missing cache price falls back to `input`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rebench.core.errors import RebenchError
from rebench.core.paths import prices_file
from rebench.harness.events import EventLog
from rebench.harness.run import Run
from rebench.harness.run_values import RunCost

__all__ = ["PriceTableError", "RunCost", "load_prices", "record_cost", "run_cost",
           "token_counts"]

# Token fields kept per model (Inspect's ModelUsage names).
TOKEN_FIELDS = ("input_tokens", "output_tokens", "input_tokens_cache_read",
                "input_tokens_cache_write", "reasoning_tokens", "total_tokens")
_PRICE_OF = {"input_tokens": "input", "output_tokens": "output",
             "input_tokens_cache_read": "cache_read", "input_tokens_cache_write": "cache_write"}


class PriceTableError(RebenchError):
    """The price table exists but cannot be read as documented."""


def load_prices(path: Path | None = None) -> dict[str, dict[str, float]]:
    """The table's models (empty when there is no table)."""
    path = path or prices_file()
    if not path.is_file():
        return {}
    try:
        models = json.loads(path.read_text())["models"]
        return {str(m): {str(k): float(v) for k, v in p.items()} for m, p in models.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PriceTableError(f"price table {path}: {exc!r}; expected "
                              '{"models": {"provider/model": {"input": 2.5, "output": 10}}} '
                              "(dollars per million tokens)") from None


def token_counts(usage: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """Per model, the token fields of Inspect ModelUsage objects (or their dicts)."""
    counts: dict[str, dict[str, int]] = {}
    for model, record in usage.items():
        data = record.model_dump() if hasattr(record, "model_dump") else dict(record)
        counts[str(model)] = {k: int(data.get(k) or 0) for k in TOKEN_FIELDS}
    return counts


def run_cost(usage: Mapping[str, Any], path: Path | None = None) -> RunCost:
    """The cost of `usage` (model -> ModelUsage or its dict) at the table's prices."""
    path = path or prices_file()
    prices = load_prices(path)
    tokens = token_counts(usage)
    dollars, unpriced = 0.0, []
    for model, counts in tokens.items():
        price = prices.get(model)
        if price is None or "input" not in price or "output" not in price:
            unpriced.append(model)
            continue
        for field, key in _PRICE_OF.items():
            rate = price.get(key, price["input"])
            dollars += counts[field] * rate / 1e6
    return RunCost(tokens, None if unpriced else round(dollars, 6), tuple(unpriced),
                   str(path) if prices else "")


def record_cost(run: Run, events: EventLog, usage: Mapping[str, Any]) -> RunCost:
    """Put the cost of `usage` in the run's record (`cost` in run.json) and its events. A
    broken price table costs the run its dollars, never its record."""
    try:
        cost = run_cost(usage)
    except PriceTableError as exc:
        cost = RunCost(token_counts(usage), None, tuple(str(m) for m in usage), "", str(exc))
    run.record.cost = cost
    run.save()
    events.emit("cost", **cost.to_json())
    return cost
