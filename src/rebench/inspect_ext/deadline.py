"""The run's deadline inside Inspect: end the sample when rebench's working clock runs out.

Inspect's own `working_limit` (set to the budget) measures time its own way; rebench's clock
is the one the run is charged, so a watcher started in the task's setup ends the sample at
rebench's deadline (Inspect then scores it, which forces the run's final score). It uses
Inspect's active-sample record, the same mechanism as Inspect's working-limit monitor.
"""

from __future__ import annotations

import anyio
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox

from rebench.harness.session import Session
from rebench.inspect_ext.sample_end import end_sample_at_deadline

POLL_S = 0.5


class WaitCredit:
    """Model calls that Inspect retried or that waited on a rate limit are not the agent's
    time: Inspect records them as the sample's waiting time; each poll credits the waiting
    time added since the last one to the run's working clock (and logs it)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.seen = _waiting_time()

    def update(self) -> None:
        now = _waiting_time()
        if now > self.seen:
            credited = self.session.run.clock.credit(now - self.seen)
            self.session.events.emit("clock_pause", seconds=round(credited, 3),
                                     reason="model call waiting (retry or rate limit)")
            self.seen = now


def _waiting_time() -> float:
    """The running sample's waiting time as Inspect measures it (0 outside a sample, or
    with an Inspect version that does not expose it)."""
    try:
        from inspect_ai._util.working import sample_waiting_time
    except ImportError:
        return 0.0
    return float(sample_waiting_time())


@solver
def deadline_watch(poll_s: float = POLL_S) -> Solver:
    """Setup step: watch the run's clock in the background for the rest of the sample."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        from inspect_ai.log._samples import sample_active

        from rebench.inspect_ext.sandbox import RebenchSandboxEnvironment

        active = sample_active()
        env = sandbox().as_type(RebenchSandboxEnvironment)
        if active is None or active.tg is None:
            return state

        async def watch() -> None:
            session = env.session
            waits = WaitCredit(session)
            while not active.completed and not active.terminal:
                waits.update()
                if session.expired or session.time_left() <= 0:
                    if env.owned:
                        session.expire()  # the hard stop: kill whatever the agent started
                    end_sample_at_deadline(session)
                    return
                await anyio.sleep(poll_s)

        active.tg.start_soon(watch)
        return state

    return solve
