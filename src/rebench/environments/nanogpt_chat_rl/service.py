"""The `judge` service: the agent's only access to the judge, metered.

Request: {"comparisons": [{"prompt": str, "a": str, "b": str}, ...]} (at most
max_comparisons_per_call). Reply: {"ok": true, "verdicts": [1.0 | 0.0 | 0.5, ...]} (1.0: a
is better, 0.0: b is better, 0.5: a tie) with the comparisons used and left of the run's
max_comparisons. Every call is logged as a `judge` event with its comparisons and
characters (the student's tokens are characters).

Accounting is reserve-then-spend: a call's comparisons are charged, under a lock, before
any of them is judged, and stay charged whatever happens after (all of a call's compute
counts against the allowance), so no burst of concurrent calls can go past it by even one
comparison (1.0.x checked before judging and charged after: a burst got 19.8% over). The
judging itself runs one call at a time: concurrent calls queue rather than multiply the
trusted side's compute, which is bounded per call by the per-call cap and the prompt and
response lengths, and the agent's working clock runs while a call waits or is judged.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from rebench.core.service import Reply
from rebench.core.spec import ServiceContext
from rebench.environments.nanogpt_chat_rl.judge import MAX_RESPONSE_CHARS, Judge, judge_endpoint
from rebench.environments.nanogpt_chat_rl.prepare import ChatParams
from rebench.environments.nanogpt_chat_rl.world import load_judge

MAX_PROMPT_CHARS = 200


def _item_error(item: object) -> str | None:
    if not isinstance(item, dict) or set(item) != {"prompt", "a", "b"}:
        return 'each comparison must be {"prompt": ..., "a": ..., "b": ...}'
    if not all(isinstance(item[k], str) for k in ("prompt", "a", "b")):
        return "prompt, a and b must be strings"
    if len(item["prompt"]) > MAX_PROMPT_CHARS:
        return f"a prompt is longer than {MAX_PROMPT_CHARS} characters"
    if max(len(item["a"]), len(item["b"])) > 4 * MAX_RESPONSE_CHARS:
        return f"a response is longer than {4 * MAX_RESPONSE_CHARS} characters"
    return None


class JudgeService:
    """Answers comparisons until the run's allowance is spent."""

    def __init__(self, judge: Judge, params: ChatParams, ctx: ServiceContext) -> None:
        self.judge = judge
        self.allowance = params.max_comparisons
        self.per_call = params.max_comparisons_per_call
        self.ctx = ctx
        self.used = 0  # comparisons reserved so far (all of them are, or are being, judged)
        self._meter = threading.Lock()  # guards `used`
        self._judging = threading.Lock()  # one call's judging at a time

    def refuse(self, error: str) -> Reply:
        with self._meter:
            used = self.used
        return {"ok": False, "error": error, "comparisons_used": used,
                "comparisons_left": self.allowance - used}

    def reserve(self, count: int) -> int | None:
        """Charge `count` comparisons before any is judged: the run's total after them,
        or None (nothing charged) when they would go past the allowance."""
        with self._meter:
            if self.used + count > self.allowance:
                return None
            self.used += count
            return self.used

    def handle(self, request: Mapping[str, Any]) -> Reply:
        items = request.get("comparisons")
        if set(request) != {"comparisons"} or not isinstance(items, list) or not items:
            return self.refuse('send {"comparisons": [{"prompt": ..., "a": ..., "b": ...}]}')
        if len(items) > self.per_call:
            return self.refuse(f"at most {self.per_call} comparisons per call")
        for item in items:
            error = _item_error(item)
            if error:
                return self.refuse(error)
        used = self.reserve(len(items))
        if used is None:
            return self.refuse(f"the run's {self.allowance} comparisons would be exceeded")
        with self._judging:
            cpu = time.thread_time()
            verdicts = [self.judge.compare(i["prompt"], i["a"], i["b"]) for i in items]
            cpu = time.thread_time() - cpu
        chars = sum(len(i["prompt"]) + len(i["a"]) + len(i["b"]) for i in items)
        self.ctx.emit("judge", {"comparisons": len(items), "characters": chars,
                                "comparisons_used": used, "cpu_s": round(cpu, 3)})
        return {"ok": True, "verdicts": verdicts, "comparisons_used": used,
                "comparisons_left": self.allowance - used}

    def close(self) -> None:
        pass


def start_judge(ctx: ServiceContext) -> JudgeService:
    params: ChatParams = ctx.profile.typed
    return JudgeService(load_judge(ctx.assets_dir, judge_endpoint()), params, ctx)
