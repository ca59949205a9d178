"""rebench on Inspect AI: every environment as an Inspect task, scored by rebench.

Needs the `inspect` extra (`pip install 'rebench[inspect]'`). See docs/inspect.md.
"""

from rebench.inspect_ext.lifecycle import RunConfig, RunSummary
from rebench.inspect_ext.offline import seed_tiktoken_cache
from rebench.inspect_ext.sandbox import (
    RebenchSandboxEnvironment,
    attach_session,
    detach_session,
)
from rebench.inspect_ext.task import attached_task, default_agent, normalized_score, rebench_task
from rebench.inspect_ext.tools import rebench_tools, score, score_log

__all__ = [
    "RebenchSandboxEnvironment",
    "RunConfig",
    "RunSummary",
    "attach_session",
    "attached_task",
    "default_agent",
    "detach_session",
    "normalized_score",
    "rebench_task",
    "rebench_tools",
    "score",
    "score_log",
    "seed_tiktoken_cache",
]
