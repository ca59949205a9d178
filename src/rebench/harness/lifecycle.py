"""The life of a run, once for every front end: the CLI driver (harness/driver.py), which
the human shell and a Ray node run through, and the Inspect sandbox
(inspect_ext/lifecycle.py) all drive a `RunLifecycle`, and only it emits the lifecycle
events: run_start (or run_resume), agent_start, agent_end (or agent_error), final_score,
run_end; initial_score comes from the t=0 score it starts.

    with RunLifecycle(run, agent_name) as life:
        session = life.begin()      # lock, start event, running status, t=0 score, session
        ...the front end's agent acts through `session`...
        life.end_turn(error)        # agent_end/agent_error, the session closed, clock paused
        score = life.finish()       # the forced final score, once; the lock released

docs/run-lifecycle.md draws it.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from rebench.core.errors import RunError, ScoringHarnessError
from rebench.harness.clock import save_clock
from rebench.harness.events import EventLog
from rebench.harness.official import now_iso
from rebench.harness.records import (
    Outcome,
    RunStatus,
    RunUsage,
    ScoreEntry,
    classify,
    valid_rate,
)
from rebench.harness.run import Run
from rebench.harness.session import Session
from rebench.scoring.contract import ScoreKind

# How often the running harness writes clock.json.
HEARTBEAT_S = 2.0
# How often the final score is tried when the harness fails at it (a trusted timeout on a
# busy machine, a crashed scorer process): a harness error is never the run's last score.
FINAL_SCORE_ATTEMPTS = 2


def events_for(run: Run) -> EventLog:
    return EventLog(run.run_dir / "events.jsonl", run.clock)


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
    SIGKILL charges the agent all but that much (for front ends whose agent loop is not
    ours, as under Inspect; the CLI driver beats inline)."""

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


class RunLifecycle:
    """One run's phases in their order, each at most once (see the module docstring).
    `heartbeat`: save the clock from a thread of its own while the session is open."""

    def __init__(self, run: Run, agent_name: str, *, heartbeat: bool = False) -> None:
        self.run = run
        self.agent_name = agent_name
        self.events = events_for(run)
        self.session: Session | None = None
        self._lock = HarnessLock(run)
        self._heartbeat = heartbeat
        self._initial: threading.Thread | None = None
        self._turn_ended = False
        # The driver and an agent that ends its own turn (Session.end_turn) may race.
        self._turn_lock = threading.Lock()

    def begin(self) -> Session:
        """Take the harness lock; log the start (or resume); mark the run running; start
        the t=0 score in the background (not on resume: the log has scores) and return
        once its snapshot exists; open the session (which starts the clock); log
        agent_start. The lock is released by `finish` (or `abandon`)."""
        run = self.run
        self._lock.acquire()
        try:
            resumed = run.record.status is not RunStatus.CREATED
            self.events.emit("run_resume" if resumed else "run_start", agent=self.agent_name,
                             budget_s=run.record.budget_s,
                             time_left_s=round(run.time_left_s(), 3), fsync=True)
            run.record.status = RunStatus.RUNNING
            run.record.outcome = None  # a resumed run's earlier outcome no longer holds
            run.save()
            self._initial = None if run.entries() else start_initial_score(run, self.events)
            session = Session(run, self.events)
        except BaseException:
            self._lock.release()
            raise
        if self._heartbeat:
            beat = Heartbeat(run)
            beat.start()
            session.on_close(beat.stop)
        session.on_end_turn(self.end_turn)
        self.session = session
        self.events.emit("agent_start", agent=self.agent_name,
                         time_left_s=round(run.time_left_s(), 3))
        return session

    def end_turn(self, error: str | None = None) -> None:
        """The agent's turn is over (`error`: its traceback, if it raised): log agent_end or
        agent_error, close the session (every process of the agent killed) and pause the
        clock (the final score is the harness's time). Only the first call counts."""
        with self._turn_lock:
            if self._turn_ended:
                return
            self._turn_ended = True
        self.events.emit("agent_error" if error else "agent_end", error=(error or "")[-2000:])
        save_clock(self.run.run_dir / "clock.json", self.run.clock)
        if error:
            self.run.record.note = error.splitlines()[-1][:500]
            self.run.record.extra.agent_traceback = error[-4000:]
        try:
            if self.session is not None:
                self.session.close()
        finally:
            self.run.clock.pause()

    def finish(self) -> float:
        """The forced final score once the t=0 score is done (finish_run), then the lock
        released; returns the run's aggregated normalized score."""
        try:
            if self._initial is not None:
                self._initial.join()
            return finish_run(self.run, self.events)
        finally:
            self._lock.release()

    def abandon(self) -> None:
        """Leave the run where it is (an interrupted eval, a harness that failed before the
        final score): the session closed, the lock released, nothing scored. Safe after
        `finish` and more than once."""
        try:
            if self.session is not None:
                self.session.close()
        finally:
            self._lock.release()

    def __enter__(self) -> RunLifecycle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.abandon()


def start_initial_score(run: Run, events: EventLog) -> threading.Thread:
    """Score the starting solution in the background; returns once its snapshot exists.
    A harness failure there is logged as one (the run goes on; `verify` will say the t=0
    score is missing)."""
    snapshot_taken = threading.Event()

    def score() -> None:
        began = time.monotonic()
        try:
            entry = run.scorer.score(ScoreKind.INITIAL, on_snapshot=snapshot_taken.set)
        except ScoringHarnessError as exc:
            events.emit("harness_error", during="initial", error=str(exc)[-4000:], fsync=True)
            return
        # The harness's work, run beside the agent's: a score the agent asks for meanwhile
        # waits on a paused clock (OfficialScorer.score), so this time is never the
        # agent's loss.
        events.emit("initial_score", index=entry.index, valid=entry.valid,
                    seconds=round(time.monotonic() - began, 3))

    thread = threading.Thread(target=score, name="initial-score", daemon=True)
    thread.start()
    while not snapshot_taken.wait(0.05):
        if not thread.is_alive():
            break
    return thread


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
            run.record.outcome = Outcome.INFRASTRUCTURE
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
        entries = run.entries()
        run.record.valid_rate = valid_rate(entries)
        run.record.outcome = classify(run.record, entries)
        run.record.usage = (run.record.usage or RunUsage()).with_scores(entries)
        run.save()
        events.emit("usage", **run.record.usage.to_json())
        events.emit("run_end", final_normalized=run.record.final_normalized,
                    outcome=run.record.outcome.value, valid_rate=run.record.valid_rate,
                    fsync=True)
        return run.record.final_normalized


def _final_score(run: Run, events: EventLog) -> ScoreEntry:
    """The final official score, tried again after a harness failure (each failure is an
    event of its own, for the record and the integrity report's infrastructure count);
    the last failure passes up."""
    attempt = 1
    while True:
        try:
            return run.scorer.score(ScoreKind.FINAL)
        except ScoringHarnessError as exc:
            events.emit("harness_error", during="final", attempt=attempt,
                        error=str(exc)[-4000:], fsync=True)
            if attempt >= FINAL_SCORE_ATTEMPTS:
                raise
        attempt += 1
