"""A reading of the source of a model's forward() for the integrity rules (integrity.py):
what it calls, what it changes, where it reads tensor values in Python, and what its hooks
run. A static reading, not a proof (the scorer's export is the enforcement): it knows
Python numbers (shapes, sizes, constants) from tensors only roughly, and flags an operation
on anything it cannot tell is a Python number.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

# Operations the forward may not use (the instructions' examples and their relatives),
# as torch functions, Tensor methods or functional names.
FORBIDDEN_OPS = frozenset({
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "softmax", "log_softmax",
    "softmin", "sigmoid", "logsigmoid", "tanh", "gelu", "silu", "mish", "elu", "selu", "celu",
    "softplus", "softsign", "hardtanh", "hardswish", "hardsigmoid", "hardshrink",
    "softshrink", "tanhshrink", "leaky_relu", "prelu", "rrelu", "relu6", "glu", "threshold",
    "clamp", "clip", "clamp_min", "clamp_max", "sqrt", "rsqrt", "square", "pow",
    "float_power", "reciprocal", "sin", "cos", "tan", "sinh", "cosh", "asin", "acos", "atan",
    "atan2", "abs", "absolute", "sign", "sgn", "div", "divide", "true_divide", "truediv",
    "floor_divide", "fmod", "remainder", "mean", "var", "std", "max", "min", "amax", "amin",
    "argmax", "argmin", "maximum", "minimum", "fmax", "fmin", "where", "masked_fill",
    "layer_norm", "batch_norm", "group_norm", "instance_norm", "rms_norm", "normalize",
    "norm", "scaled_dot_product_attention", "multi_head_attention_forward", "conv1d",
    "conv2d", "conv_transpose1d", "cumsum", "cumprod", "cummax", "logcumsumexp", "sort",
    "topk", "erf", "erfc", "erfinv", "logsumexp", "logit", "lerp", "heaviside", "gt", "ge",
    "lt", "le", "eq", "ne", "greater", "less", "isclose", "__truediv__", "__rtruediv__",
    "__pow__", "__rpow__", "__gt__", "__lt__", "__ge__", "__le__",
})
FORBIDDEN_MODULES = frozenset({
    "LayerNorm", "BatchNorm1d", "BatchNorm2d", "GroupNorm", "RMSNorm", "InstanceNorm1d",
    "MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerEncoderLayer",
    "TransformerDecoderLayer", "Conv1d", "Conv2d", "ConvTranspose1d", "Softmax", "LogSoftmax",
    "Softmin", "GELU", "SiLU", "Tanh", "Sigmoid", "ELU", "SELU", "Mish", "Softplus",
    "LeakyReLU", "PReLU", "ReLU6", "Hardtanh", "Hardswish", "GLU", "LSTM", "GRU", "RNN",
    "AvgPool1d", "MaxPool1d", "AdaptiveAvgPool1d",
})
# Names that reach torch's ops (modules and classes, as usually imported).
TORCH_NAMES = frozenset({"torch", "F", "nn", "functional", "Tensor", "aten", "special"})
INT_CASTS = frozenset({"long", "int", "short", "byte", "char", "bool", "round", "floor",
                       "ceil", "trunc"})
INT_DTYPES = frozenset({"int64", "long", "int32", "int", "int16", "short", "int8", "uint8",
                        "bool"})
VALUE_READS = frozenset({"tolist", "item", "numpy"})
REDUCTIONS = frozenset({"sum", "any", "all", "max", "min", "mean", "item", "norm", "amax",
                        "amin", "argmax", "argmin", "equal", "allclose", "tolist"})
SHAPE_ATTRS = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "training"})
SHAPE_METHODS = frozenset({"size", "dim", "numel", "stride", "element_size", "get"})
SCALAR_FUNCS = frozenset({"len", "int", "float", "range", "round", "divmod", "min", "max",
                          "abs", "pow", "sum"})
HOOKS = frozenset({"register_forward_hook", "register_forward_pre_hook",
                   "register_module_forward_hook", "register_module_forward_pre_hook"})
SIDE = frozenset({ast.Is, ast.IsNot, ast.In, ast.NotIn})
Function = ast.FunctionDef | ast.AsyncFunctionDef
Finding = tuple[str, ast.AST, str]


def constant_text(node: ast.expr | None) -> str | None:
    """The string `node` evaluates to when it is made of string constants only
    ("ex" + "p", f-strings of constants), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = constant_text(node.left), constant_text(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.JoinedStr):
        parts = [constant_text(v) for v in node.values]
        return "".join(p for p in parts if p is not None) if None not in parts else None
    return None


def root_name(node: ast.AST) -> str | None:
    """The name an attribute, subscript or call chain starts from (`self` of
    self.a.b[0].c())."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def forbidden_reference(node: ast.expr) -> str | None:
    """`torch.tanh`, `F.gelu`, `torch.Tensor.exp`: a forbidden op named, not called."""
    if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_OPS \
            and root_name(node) in TORCH_NAMES:
        return node.attr
    return None


def _call_name(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else \
        func.id if isinstance(func, ast.Name) else None


@dataclass
class ForwardScan:
    """One class's forward() and what it reaches in the same file."""

    cls: ast.ClassDef
    forward: Function
    methods: dict[str, Function]
    functions: dict[str, Function]
    scalar_attrs: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        return f"{self.cls.name}.forward"

    @classmethod
    def of_module(cls, tree: ast.Module) -> Iterator[ForwardScan]:
        functions = {f.name: f for f in tree.body if isinstance(f, Function)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                methods = {f.name: f for f in node.body if isinstance(f, Function)}
                if "forward" in methods:
                    scan = cls(node, methods["forward"], methods, functions)
                    scan.scalar_attrs = scan._scalar_attrs()
                    yield scan

    def reachable(self) -> list[Function]:
        """forward(), then the methods (self.m()) and module functions (f()) it calls."""
        seen: list[Function] = []
        todo = [self.forward]
        while todo:
            func = todo.pop()
            if any(func is s for s in seen):
                continue
            seen.append(func)
            for node in ast.walk(func):
                if not isinstance(node, ast.Call):
                    continue
                f = node.func
                if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                        and f.value.id == "self" and f.attr in self.methods:
                    todo.append(self.methods[f.attr])
                elif isinstance(f, ast.Name) and f.id in self.functions:
                    todo.append(self.functions[f.id])
        return seen

    def findings(self) -> Iterator[Finding]:
        for func in self.reachable():
            yield from _FunctionScan(self, func).findings()
        yield from self._class_findings()
        yield from self._ignored_input()

    def _class_findings(self) -> Iterator[Finding]:
        """Forbidden modules built, and forbidden ops stored, in any method."""
        for method in self.methods.values():
            for node in ast.walk(method):
                if isinstance(node, ast.Call) and _call_name(node) in FORBIDDEN_MODULES:
                    yield "forbidden", node, f"nn.{_call_name(node)}"
                elif isinstance(node, ast.Assign) and not isinstance(node.value, ast.Call):
                    name = forbidden_reference(node.value)
                    if name:
                        yield "forbidden", node, name

    def _ignored_input(self) -> Iterator[Finding]:
        args = self.forward.args
        params = [a.arg for a in (*args.posonlyargs, *args.args)][1:]  # self (or ctx) first
        if not params:
            return
        used = {n.id for n in ast.walk(self.forward) if isinstance(n, ast.Name)}
        if not used & set(params):
            yield "ignores-input", self.forward, ", ".join(params)

    def _scalar_attrs(self) -> set[str]:
        """self.X bound only to Python numbers (constants, __init__ arguments, arithmetic
        of them)."""
        init = self.methods.get("__init__")
        if init is None:
            return set()
        params = {a.arg for a in init.args.args}
        bound: dict[str, bool] = {}
        for node in ast.walk(self.cls):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for t in targets:
                if isinstance(t, ast.Attribute) and root_name(t) == "self" \
                        and isinstance(t.value, ast.Name):
                    value = node.value if isinstance(node, ast.Assign) else None
                    ok = value is not None and _numberish(value, params)
                    bound[t.attr] = bound.get(t.attr, True) and ok
        return {name for name, ok in bound.items() if ok}


def hook_findings(tree: ast.Module) -> Iterator[tuple[ast.Call, list[str]]]:
    """Forward hooks registered anywhere in the file, with the forbidden ops their
    callables (a lambda, or a function or method of the file named there) call."""
    defined: dict[str, list[Function]] = {}
    for node in ast.walk(tree):
        if isinstance(node, Function):
            defined.setdefault(node.name, []).append(node)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _call_name(node) in HOOKS and node.args):
            continue
        hook = node.args[0]
        bodies: list[ast.AST] = [hook]
        if isinstance(hook, ast.Name | ast.Attribute):
            bodies = list(defined.get(hook.id if isinstance(hook, ast.Name) else hook.attr, []))
        ops = {str(_call_name(n)) for b in bodies for n in ast.walk(b)
               if isinstance(n, ast.Call) and _call_name(n) in FORBIDDEN_OPS}
        yield node, sorted(ops)


def _numberish(node: ast.expr, names: set[str]) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool)
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.BinOp):
        return _numberish(node.left, names) and _numberish(node.right, names)
    if isinstance(node, ast.UnaryOp):
        return _numberish(node.operand, names)
    if isinstance(node, ast.Call):
        return (root_name(node) == "math" or _call_name(node) in ("int", "float", "len")) \
            and all(_numberish(a, names) for a in node.args)
    return False


class _FunctionScan:
    """The findings of one function reached from forward()."""

    def __init__(self, scan: ForwardScan, func: Function) -> None:
        self.scan = scan
        self.func = func
        self.inputs = {a.arg for a in func.args.args[1:]} if func is scan.forward else set()
        self.scalars: set[str] = {a.arg for a in func.args.args if _int_annotation(a)}
        self.tests: set[int] = set()  # ids of the nodes that are branch conditions

    def findings(self) -> Iterator[Finding]:
        for node in ast.walk(self.func):
            if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
                self.scalars.add(node.target.id)
            elif isinstance(node, ast.Assign):
                self._learn(node)
        for node in ast.walk(self.func):
            if isinstance(node, ast.If | ast.While | ast.IfExp | ast.Assert):
                self.tests.update(id(n) for n in ast.walk(node.test))
                if self._reads_values(node.test):
                    yield "value", node, "a branch on tensor values"
        for node in ast.walk(self.func):
            yield from self._node(node)

    def _learn(self, node: ast.Assign) -> None:
        if self.scalar(node.value):
            for t in node.targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        self.scalars.add(n.id)

    def scalar(self, node: ast.expr) -> bool:
        """Whether `node` is (as far as a reading can tell) a Python number."""
        if isinstance(node, ast.Constant):
            return not isinstance(node.value, str)
        if isinstance(node, ast.Name):
            return node.id in self.scalars
        if isinstance(node, ast.Attribute):
            return node.attr in SHAPE_ATTRS or (
                root_name(node) == "self" and isinstance(node.value, ast.Name)
                and node.attr in self.scan.scalar_attrs) or root_name(node) == "math"
        if isinstance(node, ast.Subscript):
            return self.scalar(node.value)
        if isinstance(node, ast.BinOp):
            return self.scalar(node.left) and self.scalar(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.scalar(node.operand)
        if isinstance(node, ast.Tuple | ast.List):
            return all(self.scalar(e) for e in node.elts)
        if isinstance(node, ast.Call):
            name = _call_name(node)
            if isinstance(node.func, ast.Attribute) and name in SHAPE_METHODS:
                return True
            named = name in SCALAR_FUNCS and isinstance(node.func, ast.Name)
            return (named or root_name(node) == "math") and all(
                self.scalar(a) for a in node.args)
        return False

    def _reads_values(self, test: ast.expr) -> bool:
        for n in ast.walk(test):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                    and n.func.attr in REDUCTIONS:
                return True
            if isinstance(n, ast.Compare) and not all(type(o) in SIDE for o in n.ops) \
                    and not all(self.scalar(e) for e in (n.left, *n.comparators)):
                return True
        return False

    def _node(self, node: ast.AST) -> Iterator[Finding]:
        if isinstance(node, ast.Call):
            yield from self._call(node)
        elif isinstance(node, ast.BinOp) and isinstance(
                node.op, ast.Div | ast.Pow | ast.FloorDiv | ast.Mod) \
                and not (self.scalar(node.left) and self.scalar(node.right)):
            symbol = {ast.Div: "/", ast.Pow: "**", ast.FloorDiv: "//", ast.Mod: "%"}
            yield "forbidden", node, f"{symbol[type(node.op)]} on a tensor"
        elif isinstance(node, ast.Compare) and id(node) not in self.tests \
                and not all(type(o) in SIDE for o in node.ops) \
                and not all(self.scalar(e) for e in (node.left, *node.comparators)):
            yield "forbidden", node, "a comparison of tensors"
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute | ast.Subscript) and root_name(t) == "self":
                    yield "state", node, ast.unparse(t)

    def _call(self, node: ast.Call) -> Iterator[Finding]:
        name = _call_name(node)
        func = node.func
        receiver = func.value if isinstance(func, ast.Attribute) else None
        if name in FORBIDDEN_OPS and not self._scalar_call(node, receiver):
            yield "forbidden", node, str(name)
        elif name in INT_CASTS and receiver is not None and not self._input_or_scalar(receiver):
            yield "forbidden", node, f"a cast to integers (.{name}())"
        elif name in ("to", "type") and receiver is not None and any(
                isinstance(a, ast.Attribute) and a.attr in INT_DTYPES
                for a in (*node.args, *(k.value for k in node.keywords))) \
                and not self._input_or_scalar(receiver):
            yield "forbidden", node, "a cast to integers"
        if name in VALUE_READS and receiver is not None and not self.scalar(receiver):
            yield "value", node, f".{name}()"
        elif name in ("bool", "float", "int") and isinstance(func, ast.Name) and node.args \
                and not self.scalar(node.args[0]):
            yield "value", node, f"{name}() of a tensor"
        if receiver is not None and root_name(receiver) == "self" and name and (
                (name.endswith("_") and not name.startswith("_"))
                or name in ("register_buffer", "register_parameter")):
            yield "state", node, f"{ast.unparse(receiver)}.{name}()"

    def _scalar_call(self, node: ast.Call, receiver: ast.expr | None) -> bool:
        if receiver is not None:
            return root_name(receiver) == "math" or self.scalar(receiver)
        return all(self.scalar(a) for a in node.args)

    def _input_or_scalar(self, node: ast.expr) -> bool:
        return root_name(node) in self.inputs or self.scalar(node)


def _int_annotation(arg: ast.arg) -> bool:
    return isinstance(arg.annotation, ast.Name) and arg.annotation.id in ("int", "float")
