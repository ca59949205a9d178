"""Named exceptions for harness errors. Bad submissions never raise: they score NaN."""


class RebenchError(Exception):
    """Base class for errors the user should see as a clear message, not a traceback."""


class UnknownEnvironmentError(RebenchError):
    """No environment folder with that id."""


class UnknownProfileError(RebenchError):
    """The environment has no profile of that name."""


class SpecError(RebenchError):
    """An environment folder is incomplete or its spec is malformed."""


class NotPreparedError(RebenchError):
    """The environment's assets are missing: run `rebench prepare` first."""


class PrepareDisabledError(NotPreparedError):
    """The assets are missing and $REBENCH_PREPARE=never forbids building them here."""


class CalibrationError(RebenchError):
    """Calibration could not measure valid anchors."""


class RunError(RebenchError):
    """A run cannot be created, resumed or read."""


class ScoreLogError(RebenchError):
    """The score log is unreadable or its hash chain does not verify."""


class ScoringHarnessError(RebenchError):
    """Official scoring failed through no fault of the submission (a scorer bug, a missing
    asset, a crashed scorer process). Never recorded as the agent's NaN score."""


class ScorerFault(ScoringHarnessError):
    """Raised by an environment's scorer when the harness side is at fault (e.g. its own
    protected asset is unreadable); the run records a harness failure."""
