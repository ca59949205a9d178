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


# What Inspect counts as a sample's waiting time (inspect_ai._util.working): the wait for a
# model connection slot, retried attempts and their backoff sleeps, the provider's time
# outside the successful request, approvals and pauses. Its total does not say which, so the
# event names them all, and says "waiting", not "retry": most model calls wait a little.
WAIT_REASON = ("Inspect waiting time (model connection slot, retries and backoff, provider "
               "time outside the request, approvals)")
# Small credits are added up and logged together: a line per model call would bury the log.
LOG_AT_S = 1.0


class WaitCredit:
    """Time Inspect counts as waiting is not the agent's: each poll credits the waiting time
    added since the last one to the run's working clock at once, and logs the credits as
    `clock_pause` events once they add up to LOG_AT_S seconds (or at `flush`), with how many
    polls found waiting time. Every credited second is in the log."""

    def __init__(self, session: Session, log_at_s: float = LOG_AT_S) -> None:
        self.session = session
        self.seen = _waiting_time()
        self.log_at_s = log_at_s
        self.pending = 0.0
        self.waits = 0

    def update(self) -> None:
        now = _waiting_time()
        if now > self.seen:
            self.pending += self.session.run.clock.credit(now - self.seen)
            self.waits += 1
            self.seen = now
        if self.pending >= self.log_at_s:
            self.flush()

    def flush(self) -> None:
        """Log the credits not logged yet (at the end of the sample): only while the run is
        running, as nothing may follow its run_end event (a remainder under LOG_AT_S is then
        in the run's working time only)."""
        from rebench.harness.records import RunStatus

        if self.waits and self.session.run.record.status is RunStatus.RUNNING:
            self.session.events.emit("clock_pause", seconds=round(self.pending, 3),
                                     waits=self.waits, reason=WAIT_REASON)
        self.pending, self.waits = 0.0, 0


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
            try:
                while not active.completed and not active.terminal:
                    waits.update()
                    if session.expired or session.time_left() <= 0:
                        if env.owned:
                            session.expire()  # the hard stop: kill whatever it started
                        end_sample_at_deadline(session)
                        return
                    await anyio.sleep(poll_s)
            finally:
                waits.flush()

        active.tg.start_soon(watch)
        return state

    return solve
