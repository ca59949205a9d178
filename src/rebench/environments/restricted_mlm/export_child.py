"""Export a model's forward as DATA: a JSON list of aten ops plus its tensors as safetensors.

Runs in the untrusted child (imports only the standard library, torch and safetensors; no
rebench code), and in the agent's own `evaluate.py` (a copy sits in the workspace).

    python export_child.py SOLUTION_DIR OUT_DIR VOCAB_SIZE SEQ_LEN BATCH MASK_ID

imports SOLUTION_DIR/model.py, calls `get_trained_model()`, exports its forward with
`torch.export` on a BATCH x SEQ_LEN batch of token ids, and writes OUT_DIR/graph.json and
OUT_DIR/tensors.safetensors (or OUT_DIR/error.json saying why it could not). What this
process reports is never trusted: the scorer checks the graph, then runs it itself.

graph.json: {"format": 1, "input": NAME, "input_shape": [B, T], "tensors": [NAME, ...],
"nodes": [{"name", "target", "args", "kwargs", "where"}], "output": ARG}. An ARG is a JSON
literal (int, float, bool, null, string), a list of ARGs, or an object: {"ref": NAME} (an
earlier node, the input or a tensor), {"dtype": NAME}, {"device": NAME}, {"layout": NAME},
{"memory_format": NAME}, {"float": "inf" | "-inf" | "nan"}, or {"unknown": TEXT}.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
import traceback
from typing import Any

FORMAT = 1
GRAPH_FILE = "graph.json"
TENSORS_FILE = "tensors.safetensors"
ERROR_FILE = "error.json"
MAX_WHERE_CHARS = 400


def _encode(value: Any) -> Any:
    """One argument of a graph node as JSON data."""
    import torch
    import torch.fx

    if isinstance(value, torch.fx.Node):
        return {"ref": value.name}
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": str(value)}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, torch.layout):
        return {"layout": str(value).removeprefix("torch.")}
    if isinstance(value, torch.memory_format):
        return {"memory_format": str(value).removeprefix("torch.")}
    return {"unknown": f"{type(value).__name__}: {str(value)[:200]}"}


def _target_name(target: Any) -> str:
    """`aten.add.Tensor` for aten ops, `module.qualname` for any other callable."""
    import torch

    if isinstance(target, torch._ops.OpOverload | torch._ops.HigherOrderOperator):
        return str(target)
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", None) or "?"
    return f"{module}.{getattr(target, '__qualname__', repr(target))}"


def _where(node: Any) -> str:
    """The module path and the last source line that produced a node (for messages)."""
    parts = []
    stack = node.meta.get("nn_module_stack") or {}
    if stack:
        path, cls = list(stack.values())[-1]
        cls_name = cls if isinstance(cls, str) else getattr(cls, "__name__", str(cls))
        parts.append(f"module {path or '<root>'} ({cls_name.rsplit('.', 1)[-1]})")
    trace = (node.meta.get("stack_trace") or "").strip().splitlines()
    if len(trace) >= 2:
        parts.append(f"{trace[-2].strip()}: {trace[-1].strip()}")
    elif trace:
        parts.append(trace[-1].strip())
    return "; ".join(parts)[:MAX_WHERE_CHARS]


def graph_data(program: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(graph.json content, name -> tensor) of an ExportedProgram."""
    import torch

    sig = program.graph_signature
    sources: dict[str, Any] = {}
    for name, key in sig.inputs_to_parameters.items():
        sources[name] = program.state_dict[key]
    for name, key in sig.inputs_to_buffers.items():
        sources[name] = (program.state_dict[key] if key in program.state_dict
                         else program.constants[key])
    for name, key in sig.inputs_to_lifted_tensor_constants.items():
        sources[name] = program.constants[key]
    user_inputs = list(sig.user_inputs)
    tensors: dict[str, Any] = {}
    nodes: list[dict[str, Any]] = []
    output: Any = None
    for node in program.graph.nodes:
        if node.op == "placeholder":
            if node.name in sources:
                value = sources[node.name]
                if not isinstance(value, torch.Tensor):
                    nodes.append({"name": node.name, "target": "constant." + type(value).__name__,
                                  "args": [], "kwargs": {}, "where": "a non-tensor constant"})
                    continue
                tensors[node.name] = value.detach().to("cpu").contiguous()
            continue
        if node.op == "output":
            output = _encode(node.args[0])
            continue
        target = _target_name(node.target)
        if node.op != "call_function":
            target = f"{node.op}:{target}"
        nodes.append({"name": node.name, "target": target, "args": _encode(list(node.args)),
                      "kwargs": {k: _encode(v) for k, v in node.kwargs.items()},
                      "where": _where(node)})
    graph = {
        "format": FORMAT,
        "input": user_inputs[0] if len(user_inputs) == 1 else None,
        "inputs": user_inputs,
        "tensors": sorted(tensors),
        "nodes": nodes,
        "output": output,
        "outputs_to_mutations": sorted(
            str(k) for k in {**sig.buffers_to_mutate, **sig.user_inputs_to_mutate}),
    }
    return graph, tensors


def load_solution(solution_dir: str) -> Any:
    """Import solution_dir/model.py and return `get_trained_model()`."""
    sys.path.insert(0, solution_dir)
    path = os.path.join(solution_dir, "model.py")
    spec = importlib.util.spec_from_file_location("model", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["model"] = module
    spec.loader.exec_module(module)
    getter = getattr(module, "get_trained_model", None)
    if not callable(getter):
        raise TypeError("model.py must define get_trained_model()")
    return getter()


def example_batch(vocab_size: int, seq_len: int, batch: int, mask_id: int) -> Any:
    """Random token ids with about 15% of positions set to the mask id."""
    import torch

    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, vocab_size, (batch, seq_len), generator=gen)
    masked = torch.rand(batch, seq_len, generator=gen) < 0.15
    return torch.where(masked, torch.full_like(tokens, mask_id), tokens)


def export_model(model: Any, example: Any) -> Any:
    """The functional aten graph of `model`'s forward on `example` (static shapes)."""
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"get_trained_model() returned {type(model).__name__}, "
                        "not a torch.nn.Module")
    model.eval()
    first = next(iter(model.parameters()), None)
    if first is not None:  # a model left on the GPU is exported there
        example = example.to(first.device)
    program = torch.export.export(model, (example,), strict=False)
    # Functionalize (in-place ops become their functional forms; eval dropout disappears)
    # without decomposing: the allow-list is over these ops.
    return program.run_decompositions({})


def write_export(program: Any, out_dir: str) -> None:
    """graph.json and tensors.safetensors of `program` in out_dir."""
    from safetensors.torch import save_file

    graph, tensors = graph_data(program)
    save_file(tensors, os.path.join(out_dir, TENSORS_FILE))
    with open(os.path.join(out_dir, GRAPH_FILE), "w") as fh:
        json.dump(graph, fh)


def main(argv: list[str]) -> int:
    solution_dir, out_dir = argv[0], argv[1]
    vocab_size, seq_len, batch, mask_id = (int(a) for a in argv[2:6])
    try:
        import torch

        torch.manual_seed(0)
        model = load_solution(solution_dir)
        program = export_model(model, example_batch(vocab_size, seq_len, batch, mask_id))
        write_export(program, out_dir)
    except BaseException as exc:  # the solution's failure, reported as data
        tail = traceback.format_exc().strip().splitlines()[-12:]
        with open(os.path.join(out_dir, ERROR_FILE), "w") as fh:
            json.dump({"error": f"{type(exc).__name__}: {str(exc)[:2000]}",
                       "traceback": "\n".join(tail)[-4000:]}, fh)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
