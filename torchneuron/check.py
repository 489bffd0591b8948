"""Check mode: every compiled graph also runs on the CPU, and a wrong value is an error.

``TORCHNEURON_CHECK=1`` (or ``torch.compile(..., backend="neuron", options={"check":
True})``) wraps each graph the backend compiles. A call runs the compiled graph, then
the graph Dynamo captured, as it is (no decompositions, no lowering rules), on CPU
copies of the same inputs, and compares every output at its dtype's tolerance
(``testing/compare.py``: the tolerances of the conformance suite). The first output
beyond it raises ``NumericsMismatchError``, after the graph's nodes are run one at a
time on the device, each from the CPU's values of its inputs, to find the first node
that is wrong by itself: the error names the graph, the output, that node, the line of
the user's source that made it and the largest error. When no node is wrong alone, the
difference comes from compiling them together (a pass), and the error says so and
names the node that made the output.

With ``options={"check": {"repro_dir": "dir"}}`` (or ``TORCHNEURON_CHECK_DIR``) the
guilty node is also written out as the smallest failing program: a standalone script
that runs the node on both devices from saved inputs (``<graph>_<node>.py`` and
``.pt``), next to the node's StableHLO (``.stablehlo.mlir``) for ``neuronc compile
--from stablehlo``.

What it does not check: graphs with random ops (their values cannot match the CPU's;
they run unchecked, with one warning), and gradients (the backward graph AOTAutograd
derives has no captured twin to run; a wrong gradient shows in the next forward's
outputs, after the optimizer used it).
"""

from __future__ import annotations

import operator
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.fx
from torch.utils import _pytree as pytree

from torchneuron import settings
from torchneuron.errors import NumericsMismatchError
from torchneuron.testing.compare import Mismatch, check_close

# Names of captured calls whose values are random (compared, they would always differ).
RANDOM_CALLS = frozenset(
    {
        "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
        "bernoulli", "bernoulli_", "multinomial", "normal", "normal_", "uniform_",
        "exponential_", "geometric_", "log_normal_", "cauchy_", "random_", "poisson",
        "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
        "feature_alpha_dropout", "native_dropout", "rrelu", "gumbel_softmax",
    }
)  # fmt: skip


def check_requested(option: Any) -> dict[str, Any] | None:
    """The check settings from the backend's ``check`` option, else the environment:
    None when checks are off, else ``{"repro_dir": str | None}``."""
    if option is None:
        if not settings.env_flag(settings.CHECK):
            return None
        return {"repro_dir": settings.env_text(settings.CHECK_DIR)}
    if option is True or option is False:
        return {"repro_dir": settings.env_text(settings.CHECK_DIR)} if option else None
    if isinstance(option, dict) and set(option) <= {"repro_dir"}:
        return {"repro_dir": option.get("repro_dir")}
    raise settings.SettingsError(
        f"option 'check' must be True, False or {{'repro_dir': path}}, not {option!r}"
    )


def _callee_name(node: torch.fx.Node) -> str:
    """What the node calls, as a user reads it: ``remainder``, ``aten.remainder.Scalar``."""
    if node.op == "call_method" or isinstance(node.target, torch._ops.OpOverload):
        return str(node.target)
    name = getattr(node.target, "__name__", str(node.target))
    return name.split(".")[-1]


def _is_random_call(node: torch.fx.Node) -> bool:
    if node.op not in ("call_function", "call_method"):
        return False
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        if torch.Tag.nondeterministic_seeded in target.tags:
            return True
        return target.overloadpacket.__name__ in RANDOM_CALLS
    return _callee_name(node) in RANDOM_CALLS


def _is_random(gm: torch.fx.GraphModule) -> bool:
    return any(_is_random_call(node) for node in gm.graph.nodes)


def checked_graph(gm: torch.fx.GraphModule, compiled, name: str, check: dict[str, Any]):
    """``compiled`` (Dynamo's calling convention: ``compiled(*args)``) checked at every
    call against ``gm`` run on the CPU."""
    if _is_random(gm):
        warnings.warn(
            f"torchneuron check mode: graph {name} has random ops, so it runs unchecked",
            stacklevel=2,
        )
        return compiled

    def run(*args):
        inputs = [_cpu_copy(a) for a in args]
        outputs = compiled(*args)
        _compare(gm, name, args, inputs, outputs, _device_of(args), check)
        return outputs

    return run


def _cpu_copy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    return value


def _device_of(args) -> torch.device:
    for value in args:
        if isinstance(value, torch.Tensor) and value.device.type == "neuron":
            return value.device
    return torch.device("neuron", torch.neuron.current_device())


def _on(device: torch.device | str):
    """A function moving the tensors and device arguments of a call to ``device``."""

    def move(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return value.detach().to(device)
        if isinstance(value, torch.device) and value.type == "neuron":
            return torch.device(device)
        if isinstance(value, str) and value.split(":")[0] == "neuron":
            return str(device)
        return value

    return move


class _Recorder(torch.fx.Interpreter):
    """Runs the graph on the CPU, keeping every node's value."""

    def __init__(self, gm: torch.fx.GraphModule):
        super().__init__(gm, garbage_collect_values=False)
        self.values: dict[torch.fx.Node, Any] = {}
        self._cpu = _on("cpu")

    def run_node(self, node: torch.fx.Node) -> Any:
        args, kwargs = self.fetch_args_kwargs_from_env(node)
        args, kwargs = pytree.tree_map(self._cpu, (args, kwargs))
        value = getattr(self, node.op)(node.target, args, kwargs)
        value = pytree.tree_map(self._cpu, value) if node.op == "get_attr" else value
        self.values[node] = value
        return value


def _compare(gm, name, args, inputs, outputs, device, check) -> None:
    recorder = _Recorder(gm)
    with torch.no_grad():
        expected = recorder.run(*inputs)
    got_leaves = pytree.tree_leaves(outputs)
    want_leaves = pytree.tree_leaves(expected)
    (output_node,) = gm.graph.find_nodes(op="output")
    producers = pytree.tree_leaves(output_node.args[0])
    # results: the outputs, then the inputs the graph updates in place (an optimizer
    # step's parameters), compared after both runs
    results = [
        (f"output {i}", got, want, producers[i] if i < len(producers) else None)
        for i, (got, want) in enumerate(zip(got_leaves, want_leaves))
    ]
    for position, node in _updated_inputs(gm):
        results.append(
            (f"input {position} (updated in place)", args[position], inputs[position], node)
        )
    for index, (what, got, want, producer) in enumerate(results):
        try:
            check_close(got, want, leaf=what)
        except Mismatch as mismatch:
            error = _localized(
                gm, name, index, what, mismatch, got, want, producer, recorder, device, check
            )
            raise error from None
    if len(got_leaves) != len(want_leaves):
        raise NumericsMismatchError(
            f"graph {name}: {len(got_leaves)} outputs, the CPU's run has {len(want_leaves)}",
            graph=name,
        )


# x += y and friends on a tensor input write it in place
_AUGMENTED = {
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor,
    operator.ilshift, operator.irshift, operator.imatmul,
}  # fmt: skip


def _updated_inputs(gm: torch.fx.GraphModule) -> list[tuple[int, torch.fx.Node]]:
    """(position, the node that updates it) of each tensor input an in-place call writes."""
    placeholders = list(gm.graph.find_nodes(op="placeholder"))
    found = {}
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method") or not node.args:
            continue
        name = (
            str(node.target) if node.op == "call_method" else getattr(node.target, "__name__", "")
        )
        in_place = (name.endswith("_") and not name.startswith("_")) or node.target in _AUGMENTED
        target = node.args[0]
        if in_place and isinstance(target, torch.fx.Node) and target in placeholders:
            found.setdefault(placeholders.index(target), node)
    return sorted(found.items())


def _localized(gm, name, index, what, mismatch, got, want, producer, recorder, device, check):
    culprit, alone = _first_wrong_node(gm, recorder, device)
    repro = None
    if culprit is not None and check.get("repro_dir"):
        from torchneuron.check_repro import write_repro

        repro = write_repro(Path(check["repro_dir"]), name, culprit, recorder)
    node = culprit if culprit is not None else producer
    where = _describe(node)
    if culprit is not None:
        blame = f"first wrong node: {where} ({alone})"
    else:
        blame = (
            f"no node is wrong when run alone on the device, so the difference comes from "
            f"compiling them together; the output comes from {where}"
        )
    message = (
        f"graph {name}: {what} differs from the CPU's: {mismatch}\n"
        f"max error {_max_error(got, want):.6g}; {blame}"
    )
    if repro is not None:
        message += f"\nsmallest failing program: {repro}"
    return NumericsMismatchError(
        message,
        graph=name,
        output=index,
        node=None if node is None else node.name,
        source=_source_line(node),
        max_error=_max_error(got, want),
        repro=repro,
    )


def _first_wrong_node(gm, recorder: _Recorder, device):
    """The first node whose value on ``device``, from the CPU's values of its inputs,
    is not the CPU's; and how far off it is."""
    to_device, to_cpu = _on(device), _on("cpu")
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method", "call_module"):
            continue
        if node.target is operator.getitem or _is_random_call(node):
            continue
        want = recorder.values.get(node)
        if not any(isinstance(v, torch.Tensor) for v in pytree.tree_leaves(want)):
            continue
        args, kwargs = recorder.fetch_args_kwargs_from_env(node)
        args, kwargs = pytree.tree_map(to_device, (args, kwargs))
        try:
            with torch.no_grad():
                got = getattr(recorder, node.op)(node.target, args, kwargs)
        except Exception as error:  # the node alone fails on the device: name it too
            return node, f"it raises on the device: {type(error).__name__}: {error}"
        try:
            check_close(pytree.tree_map(to_cpu, got), want, leaf="its value")
        except Mismatch as mismatch:
            return node, str(mismatch)
    return None, None


def _describe(node: torch.fx.Node | None) -> str:
    if node is None:
        return "an unknown node"
    source = _source_line(node)
    what = f"node {node.name} ({node.op} {_callee_name(node)})"
    return f"{what} at {source}" if source else what


def _source_line(node: torch.fx.Node | None) -> str | None:
    """``file:line: code`` of the user's line that made ``node`` (its innermost frame)."""
    if node is None:
        return None
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    lines = [line.strip() for line in trace.strip().splitlines()]
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("File "):
            code = lines[i + 1] if i + 1 < len(lines) else ""
            head = lines[i].split(",")
            file = head[0].removeprefix("File ").strip('"')
            line = head[1].strip().removeprefix("line ") if len(head) > 1 else "?"
            return f"{file}:{line}: {code}"
    return None


def _max_error(got: Any, want: Any) -> float:
    if not (isinstance(got, torch.Tensor) and isinstance(want, torch.Tensor)):
        return float("nan")
    if got.shape != want.shape or want.numel() == 0:
        return float("nan")
    got, want = got.detach().cpu(), want.detach().cpu()
    if want.is_complex() or got.is_complex():
        error = (got.to(torch.complex128) - want.to(torch.complex128)).abs()
    else:
        error = (got.double() - want.double()).abs()
    error = torch.where(torch.isnan(error), float("inf"), error)
    return float(error.max())


# -- eager ops ----------------------------------------------------------------------

# Ops whose result is not computed from their inputs (uninitialized memory).
_UNCOMPARABLE = frozenset(
    {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "resize_",
     "resize_as_", "set_"}
)  # fmt: skip
_OWN_CODE = (str(Path(torch.__file__).parent), str(Path(__file__).parent))


def set_eager_check(enabled: bool) -> None:
    """Check (or stop checking) every compiled op called on ``neuron`` tensors against
    the CPU (``TORCHNEURON_CHECK=1`` at ``import torch`` turns it on)."""
    from torchneuron.device import dispatch

    dispatch.op_check = _check_op if enabled else None


def _check_op(op: torch._ops.OpOverload, args: tuple, kwargs: dict, run) -> Any:
    name = op._schema.name.split("::")[-1]
    if name in _UNCOMPARABLE or torch.Tag.nondeterministic_seeded in op.tags:
        return run()
    cpu_args, cpu_kwargs = pytree.tree_map(_cpu_copy, (args, kwargs))
    result = run()
    expected = _on_cpu(op, cpu_args, cpu_kwargs)
    if expected is None:  # the CPU refuses this call: there is nothing to compare with
        return result
    got_leaves, want_leaves = pytree.tree_leaves(result), pytree.tree_leaves(expected)
    for index, (got, want) in enumerate(zip(got_leaves, want_leaves)):
        if not isinstance(want, torch.Tensor):
            continue
        try:
            check_close(got, want, leaf=f"output {index}")
        except Mismatch as mismatch:
            source = _user_line()
            error = _max_error(got, want)
            raise NumericsMismatchError(
                f"eager op {op}: {mismatch}\nmax error {error:.6g}; called at "
                f"{source or 'an unknown line'}",
                graph=f"eager {op}",
                output=index,
                node=str(op),
                source=source,
                max_error=error,
            ) from None
    return result


def _on_cpu(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    """The op's CPU result, or None where the CPU refuses the call. The device's kernels
    get scalar operands as Python numbers (so new values do not recompile) where the
    overload wants a tensor; the op's other overloads take them as they are."""
    for call in (op, op.overloadpacket):
        try:
            with torch.no_grad():
                return call(*args, **kwargs)
        except Exception:  # noqa: S112 (a refusal of this form: try the next)
            continue
    return None


def _user_line() -> str | None:
    """``file:line: code`` of the innermost frame outside torch and torchneuron."""
    import traceback

    for frame in reversed(traceback.extract_stack()):
        if not frame.filename.startswith(_OWN_CODE) and not frame.filename.startswith("<"):
            return f"{frame.filename}:{frame.lineno}: {(frame.line or '').strip()}"
    return None
