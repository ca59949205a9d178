"""What travels between the driver and a node: one attempt's order and its result."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

from rebench.core.errors import RebenchError

# Workspaces larger than this stay on the node; the run's protected/ evidence always comes.
DEFAULT_WORKSPACE_CAP_BYTES = 256 * 1024 * 1024


class ScaleError(RebenchError):
    """A batch on Ray cannot start, resume, or accept what a node sent back."""


# The isolation a node resolves for itself (`auto`: bwrap there, or refuse to run).
IsolationChoice = Literal["auto", "bwrap", "local"]


@dataclass(frozen=True)
class AttemptSpec:
    """One try of one attempt, as sent to a node.

    `key` identifies the attempt within its batch (stable across tries and driver restarts);
    `try_no` counts the tries so far, starting at 1. `calibration` is the driver's
    calibration file (JSON text): a node uses the entry of its own hardware fingerprint from
    it unless it measured its own."""

    batch_id: str
    key: int
    try_no: int
    env_id: str
    env_version: str
    profile: str
    agent: str
    seed: int
    budget_s: float | None
    isolation: str
    calibration: str = "{}"
    workspace_cap_bytes: int = DEFAULT_WORKSPACE_CAP_BYTES
    # The driver's score-log master key (hex): the node keys the run's log with it, so the
    # run verifies on the driver (nodes are the operator's own machines; no sandbox sees it).
    score_log_key: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> AttemptSpec:
        data: dict[str, Any] = json.loads(text)
        return cls(**data)

    def label(self) -> str:
        return f"{self.env_id}/{self.profile} {self.agent} seed={self.seed}"


@dataclass(frozen=True)
class AttemptResult:
    """What a node sends back for one try: the run folder as an archive (empty when the
    harness could not even create the run), where it ran, and when things happened
    (wall-clock epoch seconds on the node)."""

    key: int
    try_no: int
    node_id: str
    node_ip: str
    hostname: str
    run_id: str
    archive: bytes
    returncode: int
    resumed: bool
    task_started_at: float
    workspace_omitted_bytes: int = 0
    error: str = ""
