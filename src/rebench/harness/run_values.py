"""The checked values a run record is made of: run.json's nested objects (a run's cost, its
link to an Inspect sample, its batch landing, the extra fields) and the readers that check
each field's type, raising RecordError with the field's name (harness/records.py)."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from rebench.core.normalize import Anchors, AnchorSource

_E = TypeVar("_E", bound=enum.Enum)


class RecordError(ValueError):
    """A run.json whose fields do not read as a run record: one missing, of the wrong type,
    or a value this version does not know. Names the field."""


def json_object(where: str, value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise RecordError(f"{where}: expected a JSON object, not {type(value).__name__}")
    return value


def json_text(where: str, value: object) -> str:
    if not isinstance(value, str):
        raise RecordError(f"{where}: expected a string, not {type(value).__name__}")
    return value


def json_int(where: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"{where}: expected an integer, not {type(value).__name__}")
    return value


def json_number(where: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RecordError(f"{where}: expected a number, not {type(value).__name__}")
    return float(value)


def json_bool(where: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise RecordError(f"{where}: expected true or false, not {type(value).__name__}")
    return value


def json_member(where: str, enum_type: type[_E], value: object) -> _E:
    try:
        return enum_type(value)
    except ValueError:
        allowed = ", ".join(str(m.value) for m in enum_type)
        raise RecordError(f"{where}: {value!r} is not one of {allowed}") from None


def known_keys(where: str, data: dict[str, Any], known: tuple[str, ...]) -> None:
    unknown = sorted(data.keys() - set(known))
    if unknown:
        raise RecordError(f"{where}: unknown fields {unknown} (a record of a newer rebench?)")


def anchors_from_json(where: str, value: object) -> Anchors:
    """The record's `anchors` (core.normalize.Anchors.to_json), every field checked."""
    data = json_object(where, value)
    known_keys(where, data, ("starting_raw", "reference_raw", "source", "hardware"))
    try:
        return Anchors(json_number(f"{where}.starting_raw", data["starting_raw"]),
                       json_number(f"{where}.reference_raw", data["reference_raw"]),
                       json_member(f"{where}.source", AnchorSource, data["source"]),
                       json_text(f"{where}.hardware", data["hardware"]))
    except KeyError as exc:
        raise RecordError(f"{where}: missing field {exc}") from None


@dataclass(frozen=True)
class RunCost:
    """What a run's model calls cost (harness/costs.py): tokens per model (Inspect's
    ModelUsage fields), and dollars where every model used has a price; `unpriced` names
    the models the price table lacks, `prices_from` the table, `error` why it could not
    be used."""

    tokens: dict[str, dict[str, int]]
    dollars: float | None
    unpriced: tuple[str, ...]
    prices_from: str
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "dollars": self.dollars,
                "unpriced": list(self.unpriced), "prices_from": self.prices_from,
                "error": self.error}

    @classmethod
    def from_json(cls, value: object, where: str = "cost") -> RunCost:
        data = json_object(where, value)
        known_keys(where, data, ("tokens", "dollars", "unpriced", "prices_from", "error"))
        tokens = {
            json_text(f"{where}.tokens", model): {
                json_text(f"{where}.tokens.{model}", name):
                    json_int(f"{where}.tokens.{model}.{name}", n)
                for name, n in json_object(f"{where}.tokens.{model}", counts).items()}
            for model, counts in json_object(f"{where}.tokens", data.get("tokens", {})).items()}
        dollars = data.get("dollars")
        unpriced = data.get("unpriced", [])
        if not isinstance(unpriced, list):
            raise RecordError(f"{where}.unpriced: expected a list, not {type(unpriced).__name__}")
        return cls(tokens, None if dollars is None else json_number(f"{where}.dollars", dollars),
                   tuple(json_text(f"{where}.unpriced[]", m) for m in unpriced),
                   json_text(f"{where}.prices_from", data.get("prices_from", "")),
                   json_text(f"{where}.error", data.get("error", "")))


# The fields of an Inspect sample's context (inspect_ext.lifecycle.inspect_context): all of
# them are written, None where Inspect has none.
INSPECT_SAMPLE_FIELDS = ("task", "model", "eval_id", "run_id", "sample_uuid", "epoch",
                         "log_location")
_INSPECT_FIELDS = (*INSPECT_SAMPLE_FIELDS, "status")


@dataclass(frozen=True)
class InspectLink:
    """Where the run's Inspect eval is (`extra.inspect`). An Inspect sample's run records the
    sample's context (INSPECT_SAMPLE_FIELDS; empty outside a sample); a CLI run of an
    `inspect:` agent records the eval it started (model, status, log_location, eval_id).
    `written`: the fields its JSON has, in order (None where not given: those that are not
    None), so a record reads back to the JSON it was read from."""

    task: str | None = None
    model: str | None = None
    eval_id: str | None = None
    run_id: str | None = None
    sample_uuid: str | None = None
    epoch: int | None = None
    log_location: str | None = None
    status: str | None = None
    written: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.written is None:
            names = tuple(n for n in _INSPECT_FIELDS if getattr(self, n) is not None)
            object.__setattr__(self, "written", names)
        elif unknown := set(self.written) - set(_INSPECT_FIELDS):
            raise RecordError(f"extra.inspect: unknown fields {sorted(unknown)}")

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.written or ()}

    @classmethod
    def from_json(cls, value: object, where: str = "extra.inspect") -> InspectLink:
        data = json_object(where, value)
        known_keys(where, data, _INSPECT_FIELDS)
        fields: dict[str, Any] = {}
        for name, item in data.items():
            if item is not None:
                item = (json_int if name == "epoch" else json_text)(f"{where}.{name}", item)
            fields[name] = item
        return cls(**fields, written=tuple(data))


@dataclass(frozen=True)
class BatchLanding:
    """How a run of a Ray batch landed (`extra.batch`, scale.driver): the batch and its
    attempt, how many tries it took (the lost ones, one line each), whether the run was
    resumed, the node it finished on, and the workspace bytes left out of its archive."""

    batch_id: str
    attempt: int
    tries: int
    lost_tries: tuple[str, ...]
    resumed: bool
    node_ip: str
    node_id: str
    hostname: str
    workspace_omitted_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["lost_tries"] = list(self.lost_tries)
        return data

    @classmethod
    def from_json(cls, value: object, where: str = "extra.batch") -> BatchLanding:
        data = json_object(where, value)
        known_keys(where, data, tuple(cls.__dataclass_fields__))
        try:
            lost = data["lost_tries"]
            if not isinstance(lost, list):
                raise RecordError(f"{where}.lost_tries: expected a list")
            return cls(json_text(f"{where}.batch_id", data["batch_id"]),
                       json_int(f"{where}.attempt", data["attempt"]),
                       json_int(f"{where}.tries", data["tries"]),
                       tuple(json_text(f"{where}.lost_tries[]", line) for line in lost),
                       json_bool(f"{where}.resumed", data["resumed"]),
                       json_text(f"{where}.node_ip", data["node_ip"]),
                       json_text(f"{where}.node_id", data["node_id"]),
                       json_text(f"{where}.hostname", data["hostname"]),
                       json_int(f"{where}.workspace_omitted_bytes",
                              data.get("workspace_omitted_bytes", 0)))
        except KeyError as exc:
            raise RecordError(f"{where}: missing field {exc}") from None


@dataclass
class RunExtra:
    """What a run's front end adds to its record (`extra` in run.json), each absent until
    set: `agent_traceback`, the end of the agent's traceback where its turn raised;
    `crashed`, why an Inspect sample ended without reaching its scorer; `inspect`, its
    Inspect eval (InspectLink); `batch`, how it landed from a Ray batch (BatchLanding)."""

    agent_traceback: str | None = None
    crashed: str | None = None
    inspect: InspectLink | None = None
    batch: BatchLanding | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for name in ("inspect", "batch", "agent_traceback", "crashed"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value if isinstance(value, str) else value.to_json()
        return data

    @classmethod
    def from_json(cls, value: object, where: str = "extra") -> RunExtra:
        data = json_object(where, value)
        known_keys(where, data, ("inspect", "batch", "agent_traceback", "crashed"))
        inspect, batch = data.get("inspect"), data.get("batch")
        traceback, crashed = data.get("agent_traceback"), data.get("crashed")
        return cls(
            agent_traceback=None if traceback is None else json_text(f"{where}.agent_traceback",
                                                                 traceback),
            crashed=None if crashed is None else json_text(f"{where}.crashed", crashed),
            inspect=None if inspect is None else InspectLink.from_json(inspect),
            batch=None if batch is None else BatchLanding.from_json(batch))
