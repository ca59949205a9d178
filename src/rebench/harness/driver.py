"""Drive one attempt from the command line (the CLI, the human shell and a Ray node run
through it): the run's phases are harness.lifecycle.RunLifecycle's; here is the agent's
turn under a hard deadline.

The agent acts in a thread while this one keeps the clock: it saves the clock every few
seconds (so a resume after SIGKILL charges the agent all but that much) and, at the
deadline, expires the session, which kills every process the agent started (the sandbox's
pid namespace, detached processes included), before the final official score.
"""

from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass

from rebench.harness.agent import Agent
from rebench.harness.clock import save_clock
from rebench.harness.lifecycle import HEARTBEAT_S, RunLifecycle
from rebench.harness.run import Run
from rebench.harness.session import OutOfTimeError, Session

# How long the agent's thread gets to notice the hard stop before it is left behind.
AGENT_STOP_GRACE_S = 5.0


@dataclass
class AgentOutcome:
    """How the agent's turn ended."""

    deadline_hit: bool = False
    hard_stop_lateness_s: float | None = None
    error: str | None = None


def execute_run(run: Run, agent: Agent) -> float:
    """Run `agent` on `run` and return the run's aggregated normalized score.

    The starting solution is scored at t=0 (unless the log already has entries, e.g. on
    resume): its snapshot is taken before the agent starts, its scoring runs while the agent
    works. An agent that raises loses nothing: the error is noted and the final score runs.
    """
    with RunLifecycle(run, agent.name) as life:
        session = life.begin()
        outcome = AgentOutcome()
        try:
            outcome = run_agent(session, agent)
        finally:
            life.end_turn(outcome.error)
        return life.finish()


def run_agent(session: Session, agent: Agent) -> AgentOutcome:
    """The agent's turn: act in a thread, stop it hard at the deadline."""
    run, events = session.run, session.events
    outcome = AgentOutcome()
    done = threading.Event()

    def work() -> None:
        try:
            agent.act(session)
        except OutOfTimeError:
            pass
        except Exception:  # the agent's failure is part of the run, not a harness crash
            outcome.error = traceback.format_exc()
        finally:
            done.set()

    thread = threading.Thread(target=work, name=f"agent-{agent.name}", daemon=True)
    thread.start()
    clock_file = run.run_dir / "clock.json"
    while not done.is_set():
        left = run.clock.time_left_s()
        if left <= 0:
            outcome.deadline_hit = True
            break
        done.wait(min(HEARTBEAT_S, left))
        save_clock(clock_file, run.clock)
    if outcome.deadline_hit:
        overshoot = max(0.0, run.working_s() - run.record.budget_s)
        started = time.monotonic()
        events.emit("deadline", fsync=True)
        session.expire()
        outcome.hard_stop_lateness_s = round(overshoot + time.monotonic() - started, 3)
        thread.join(AGENT_STOP_GRACE_S)
        events.emit("hard_stop", lateness_s=outcome.hard_stop_lateness_s,
                    agent_thread_alive=thread.is_alive(), fsync=True)
    return outcome
