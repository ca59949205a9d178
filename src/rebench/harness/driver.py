"""Drive one attempt: initial score, the agent's turn under a hard deadline, final score.

The agent acts in a thread while this one keeps the clock: it saves the clock every few
seconds (so a resume after SIGKILL charges the agent all but that much) and, at the
deadline, expires the session, which kills every process the agent started (the sandbox's
pid namespace, detached processes included), before the final official score.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

from rebench.core.errors import RunError, ScoringHarnessError
from rebench.harness.agent import Agent
from rebench.harness.clock import save_clock
from rebench.harness.events import EventLog
from rebench.harness.records import RunStatus, ScoreEntry
from rebench.harness.run import Run, now_iso
from rebench.harness.session import OutOfTimeError, Session

# How often the running harness writes clock.json.
HEARTBEAT_S = 2.0
# How long the agent's thread gets to notice the hard stop before it is left behind.
AGENT_STOP_GRACE_S = 5.0


@dataclass
class AgentOutcome:
    """How the agent's turn ended."""

    deadline_hit: bool = False
    hard_stop_lateness_s: float | None = None
    error: str | None = None


def events_for(run: Run) -> EventLog:
    return EventLog(run.run_dir / "events.jsonl", run.clock)


def execute_run(run: Run, agent: Agent) -> float:
    """Run `agent` on `run` and return the run's aggregated normalized score.

    The starting solution is scored at t=0 (unless the log already has entries, e.g. on
    resume): its snapshot is taken before the agent starts, its scoring runs while the agent
    works. An agent that raises loses nothing: the error is noted and the final score runs.
    """
    with harness_lock(run):
        return _execute_locked(run, agent)


class HarnessLock:
    """The run's harness lock (an flock on harness.lock): one live harness per run. It dies
    with its process, so a run whose harness was SIGKILLed can be resumed at once."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lock; RunError if another live harness holds it."""
        handle = (self.run.run_dir / "harness.lock").open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise RunError(f"run {self.run.record.run_id} is being run by another harness "
                           "right now") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing the file drops the flock
            self._handle = None


@contextmanager
def harness_lock(run: Run) -> Iterator[None]:
    """Hold the run's harness lock for the block (HarnessLock)."""
    lock = HarnessLock(run)
    lock.acquire()
    try:
        yield
    finally:
        lock.release()


class Heartbeat:
    """Writes the run's clock to clock.json every HEARTBEAT_S in a thread, so a resume after
    SIGKILL charges the agent all but that much (used when the agent's loop is not ours,
    as under Inspect; `run_agent` beats inline)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="clock-heartbeat",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            save_clock(self.run.run_dir / "clock.json", self.run.clock)

    def stop(self) -> None:
        self._stop.set()
        save_clock(self.run.run_dir / "clock.json", self.run.clock)


def begin_run(run: Run, agent_name: str, events: EventLog) -> threading.Thread | None:
    """The phases before the agent acts, for every way of running an agent: log the start
    (or resume), mark the run running, start the t=0 score (None when the log already has
    scores, e.g. on resume); returns once the t=0 snapshot exists."""
    resumed = run.record.status is not RunStatus.CREATED
    events.emit("run_resume" if resumed else "run_start", agent=agent_name,
                budget_s=run.record.budget_s, time_left_s=round(run.time_left_s(), 3),
                fsync=True)
    run.record.status = RunStatus.RUNNING
    run.save()
    return None if run.entries() else start_initial_score(run, events)


def _execute_locked(run: Run, agent: Agent) -> float:
    events = events_for(run)
    initial = begin_run(run, agent.name, events)
    session = Session(run, events)
    try:
        outcome = run_agent(session, agent)
    finally:
        session.close()
        run.clock.pause()  # the agent's time ends with its turn; the final score is ours
    if outcome.error:
        run.record.note = outcome.error.splitlines()[-1][:500]
        run.record.extra["agent_traceback"] = outcome.error[-4000:]
    if initial is not None:
        initial.join()
    return finish_run(run, events)


def start_initial_score(run: Run, events: EventLog) -> threading.Thread:
    """Score the starting solution in the background; returns once its snapshot exists.
    A harness failure there is logged as one (the run goes on; `verify` will say the t=0
    score is missing)."""
    snapshot_taken = threading.Event()

    def score() -> None:
        began = time.monotonic()
        try:
            entry = run.score("initial", on_snapshot=snapshot_taken.set)
        except ScoringHarnessError as exc:
            events.emit("harness_error", during="initial", error=str(exc)[-4000:], fsync=True)
            return
        # The harness's work, run beside the agent's: a score the agent asks for meanwhile
        # waits on a paused clock (Run.score), so this time is never the agent's loss.
        events.emit("initial_score", index=entry.index, valid=entry.valid,
                    seconds=round(time.monotonic() - began, 3))

    thread = threading.Thread(target=score, name="initial-score", daemon=True)
    thread.start()
    while not snapshot_taken.wait(0.05):
        if not thread.is_alive():
            break
    return thread


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

    events.emit("agent_start", agent=agent.name, time_left_s=round(run.time_left_s(), 3))
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
    events.emit("agent_error" if outcome.error else "agent_end",
                error=(outcome.error or "")[-2000:])
    save_clock(clock_file, run.clock)
    return outcome


def finish_run(run: Run, events: EventLog | None = None) -> float:
    """Force the final official score and close the record, once: a run already finished
    (an Inspect agent's scorer finishes its own run) is left as it is."""
    with run.finish_lock:
        if run.record.status is RunStatus.FINISHED and run.record.final_normalized is not None:
            return run.record.final_normalized
        events = events or events_for(run)
        run.record.working_s_used = round(run.working_s(), 3)
        try:
            entry = _final_score(run, events)
        except ScoringHarnessError as exc:
            run.record.status = RunStatus.FAILED
            run.record.note = ("harness error in the final score (the agent is not charged; "
                               f"fix it and `rebench resume {run.record.run_id}`): "
                               + str(exc).splitlines()[0][:300])
            run.save()
            raise
        events.emit("final_score", index=entry.index, valid=entry.valid, raw=entry.raw,
                    normalized=entry.normalized, message=entry.message)
        run.record.status = RunStatus.FINISHED
        run.record.finished_at = now_iso()
        run.record.final_normalized = run.aggregate_normalized()
        run.save()
        events.emit("run_end", final_normalized=run.record.final_normalized, fsync=True)
        return run.record.final_normalized


# How often the final score is tried when the harness fails at it (a trusted timeout on a
# busy machine, a crashed scorer process): a harness error is never the run's last score.
FINAL_SCORE_ATTEMPTS = 2


def _final_score(run: Run, events: EventLog) -> ScoreEntry:
    """The final official score, tried again after a harness failure (each failure is an
    event of its own, for the record and the integrity report's infrastructure count);
    the last failure passes up."""
    attempt = 1
    while True:
        try:
            return run.score("final")
        except ScoringHarnessError as exc:
            events.emit("harness_error", during="final", attempt=attempt,
                        error=str(exc)[-4000:], fsync=True)
            if attempt >= FINAL_SCORE_ATTEMPTS:
                raise
        attempt += 1
