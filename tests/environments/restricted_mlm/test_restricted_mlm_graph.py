"""The checker and interpreter on their own (no sandbox, no prepared assets): the graph the
scorer runs computes what the module computes, and malformed or forbidden graphs fail
with a GraphError naming the problem."""

from __future__ import annotations

import copy
import importlib.util
import json
from typing import Any

import numpy as np
import pytest
import torch

from rebench.core.discovery import environment_dir
from rebench.environments.restricted_mlm.export_child import (
    example_batch,
    export_model,
    graph_data,
)
from rebench.environments.restricted_mlm.graph_check import (
    GraphError,
    Limits,
    parse_graph,
    plan,
    run,
)
from rebench.environments.restricted_mlm.prepare import split_heldout

VOCAB = 64


def _module(folder: str) -> Any:
    path = environment_dir("restricted_mlm") / folder / "model.py"
    spec = importlib.util.spec_from_file_location(f"mlm_{folder}_model", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _export(model: torch.nn.Module) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    torch.manual_seed(0)
    return graph_data(export_model(model, example_batch(VOCAB, 128, 8, 0)))


@pytest.fixture(scope="module")
def conv_graph() -> tuple[torch.nn.Module, dict[str, Any], dict[str, torch.Tensor]]:
    torch.manual_seed(0)
    model = _module("reference").ConvNet(VOCAB, n_embd=16, n_hidden=32, kernel=5, n_layer=2)
    graph, tensors = _export(model)
    return model, graph, tensors


def test_interpreted_graph_matches_the_module(conv_graph: Any) -> None:
    model, graph, tensors = conv_graph
    program = parse_graph(json.dumps(graph), tensors)
    assert {"aten.as_strided.default", "aten.einsum.default", "aten.cat.default"} <= set(
        program.op_counts)
    tokens = torch.randint(0, VOCAB, (8, 128))
    with torch.no_grad():
        expected = model(tokens)
    got = run(program, tokens, tensors)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_starting_mlp_is_allowed() -> None:
    model = _module("starting").MLP(VOCAB)
    graph, tensors = _export(model)
    assert parse_graph(json.dumps(graph), tensors).op_counts == {
        "aten.embedding.default": 1, "aten.linear.default": 2, "aten.relu.default": 1}


def _edited(conv_graph: Any, edit: Any) -> tuple[str, dict[str, torch.Tensor]]:
    _, graph, tensors = conv_graph
    graph = copy.deepcopy(graph)
    edit(graph)
    return json.dumps(graph), tensors


def _set_target(target: str) -> Any:
    def edit(graph: dict[str, Any]) -> None:
        graph["nodes"][-1]["target"] = target
    return edit


@pytest.mark.parametrize(("target", "message"), [
    ("aten.add.out", "aten.add.out is not allowed"),
    ("aten.relu_.default", "is not allowed"),
    ("aten._softmax.default", "is not allowed"),
    ("builtins.eval", "is not allowed"),
    ("call_module:head", "is not allowed"),
    ("aten.linear.not_an_overload", "is not allowed"),
    ("higher_order.cond", "is not allowed"),
])
def test_forbidden_targets(conv_graph: Any, target: str, message: str) -> None:
    text, tensors = _edited(conv_graph, _set_target(target))
    with pytest.raises(GraphError, match=message):
        parse_graph(text, tensors)


def test_malformed_graphs(conv_graph: Any) -> None:
    def undefined_ref(graph: dict[str, Any]) -> None:
        graph["nodes"][0]["args"][0] = {"ref": "later_node"}

    def duplicate(graph: dict[str, Any]) -> None:
        graph["nodes"][1]["name"] = graph["nodes"][0]["name"]

    def unknown_arg(graph: dict[str, Any]) -> None:
        graph["nodes"][0]["args"].append({"unknown": "function: <lambda>"})

    def two_outputs(graph: dict[str, Any]) -> None:
        graph["output"] = graph["output"] * 2

    def three_operand_einsum(graph: dict[str, Any]) -> None:
        node = next(n for n in graph["nodes"] if n["target"].startswith("aten.einsum"))
        node["args"][1].append(node["args"][1][0])

    def deep_nesting(graph: dict[str, Any]) -> None:
        del graph  # built as text by _deep_text

    def input_is_a_tensor(graph: dict[str, Any]) -> None:
        graph["inputs"] = [graph["tensors"][0]]

    cases = [(input_is_a_tensor, "also the name"), (undefined_ref, "before it is defined"),
             (duplicate, "defined twice"),
             (unknown_arg, "not a constant"), (two_outputs, "exactly one tensor"),
             (three_operand_einsum, "at most two operands"), (deep_nesting, "nested")]
    for edit, message in cases:
        text, tensors = _edited(conv_graph, edit) if edit is not deep_nesting else (
            _deep_text(conv_graph), conv_graph[2])
        with pytest.raises(GraphError, match=message):
            parse_graph(text, tensors)
    _, _, tensors = conv_graph
    with pytest.raises(GraphError, match="not valid JSON"):
        parse_graph("{", tensors)
    with pytest.raises(GraphError, match="different tensors"):
        parse_graph(_edited(conv_graph, lambda g: None)[0], {})


def _deep_text(conv_graph: Any) -> str:
    """graph.json with an argument nested 100,000 lists deep (json.dumps cannot write it)."""
    _, graph, _ = conv_graph
    text = json.dumps(graph)
    return text.replace('"args": [', '"args": [' + "[" * 100_000 + "]" * 100_000 + ", ", 1)


def test_meta_pass_bounds_memory(conv_graph: Any) -> None:
    _, graph, tensors = conv_graph
    program = parse_graph(json.dumps(graph), tensors)
    assert plan(program, tensors, 8, 128, VOCAB, Limits(1 << 24, 1 << 30, 1 << 40)).macs > 0
    with pytest.raises(GraphError, match="more than the limit"):
        plan(program, tensors, 8, 128, VOCAB, Limits(1000, 1 << 30, 1 << 40))


def test_getitem_only_on_lists(conv_graph: Any) -> None:
    def getitem_on_tensor(graph: dict[str, Any]) -> None:
        last = graph["nodes"][-1]
        graph["nodes"].append({"name": "picked", "target": "_operator.getitem",
                               "args": [{"ref": last["name"]}, 0], "kwargs": {}, "where": ""})
        graph["output"] = [{"ref": "picked"}]

    text, tensors = _edited(conv_graph, getitem_on_tensor)
    program = parse_graph(text, tensors)
    with pytest.raises(GraphError, match="getitem only picks"):
        run(program, torch.zeros((8, 128), dtype=torch.long), tensors)


def test_heldout_split_depends_only_on_the_secret() -> None:
    tokens = np.arange(100 * 16, dtype=np.uint16)
    val, test = split_heldout(tokens, 16, b"a" * 32)
    assert len(val) == len(test) == 50 * 16
    assert not set(val.tolist()) & set(test.tolist())
    _, again_test = split_heldout(tokens, 16, b"a" * 32)
    assert np.array_equal(again_test, test)
    _, other_test = split_heldout(tokens, 16, b"b" * 32)
    assert not np.array_equal(other_test, test)
