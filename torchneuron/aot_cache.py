"""AOTAutograd's result for a Dynamo graph, kept on disk so the next process skips its tracing.

A warm process that finds every NEFF of a compiled model on disk still spent most of its
first step in AOTAutograd: tracing the joint forward and backward graph again and
partitioning it (5.8 s of the GPT's 9.2 s here), only to hand our compiler graphs whose
programs it already had. PyTorch keeps AOTAutograd's result in its own cache when the
graph compilers return ``OutputCode`` objects it can pickle (Inductor's do); this module
makes ours do so too:

- ``serializable(role, compile_fn)`` wraps a forward/backward/inference compiler so it
  returns a ``NeuronOutputCode``: the callable our route made, plus the ATen graph it
  was made from. Pickled, the object keeps the graph only (PyTorch's ``GraphPickler``,
  which carries the fake tensors of its nodes); loaded, ``post_compile`` hands the graph
  to the current process's compiler of the same role, whose NEFFs are disk-cache hits.
  PyTorch's entry keeps the rest: the runtime metadata of the wrappers it puts around
  the two graphs (mutations, aliases, what the forward saves for the backward).
- ``storing_in_our_cache()`` (around the AOTAutograd call of our backend) turns that
  cache on for the call, with our key and our storage: entries live in
  ``<cache root>/aot/`` as ``DiskCache`` entries (``graph_cache.AotResultCache``), behind
  a header naming their key and sha256, read only from files this user owns and nobody
  else may write (a pickle is code: the same rule as the XLA executables), bounded in
  size, with one warning for a bad entry, which is a miss. The key (``_key_of``) digests
  the backend's key of the Dynamo graph (its code, its inputs' metadata, grad, autocast
  and deterministic modes, our options), PyTorch's version and AOTAutograd's configuration, mixed
  with our compiler's fingerprint and the backend's source: an edit of a decomposition
  misses. PyTorch's own key would import Inductor's code generators and hash PyTorch's
  sources (3.2 s of the warm GPT's first step here).
- ``_install_save_hooks`` sends the saving of our entries (and only ours: an entry whose
  forward is a ``NeuronOutputCode``) to our storage, in PyTorch's bundled form; a
  training graph's entry is saved at its first ``backward()``, outside our call.

The hooks and the patches are process-wide while they last; a compile of Inductor's on
another thread in those moments could at worst find its entry bundled (still its own,
valid) or written where it never looks (a miss), never one of ours: our keys are ours.
A graph the backend's key cannot describe (parameters held by the module, symbolic
sizes) is not kept, nor one with effect tokens (AOTAutograd threads tokens differently
around a loaded graph). ``TORCHNEURON_CACHE=0`` turns it off with the rest of the disk
cache. An entry holds one result per key (PyTorch's own cache may hold several, one per
set of shape guards).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.fx
from torch._functorch._aot_autograd.autograd_cache import AOTAutogradCache, BypassAOTAutogradCache
from torch._functorch._aot_autograd.schemas import SerializableAOTDispatchCompiler
from torch._inductor.output_code import OutputCode

from torchneuron.compiler.graph_cache import AotResultCache
from torchneuron.runtime.disk_cache import default_cache, disk_cache_enabled

# -- the graph compilers' output ---------------------------------------------------


class NeuronOutputCode(OutputCode):
    """A compiled ATen graph of our backend, as AOTAutograd's cache keeps it: the callable
    our route made (not pickled) and the graph it was made from (pickled)."""

    def __init__(self, role: str, gm: torch.fx.GraphModule, function: Callable):
        super().__init__()
        # an attribute of the instance: the wrappers PyTorch puts around a backward copy
        # the instance's attributes, and call it boxed only if they see this one
        self._boxed_call = True
        self.role = role
        self._gm: torch.fx.GraphModule | None = gm
        self._function: Callable | None = function
        self._graph_bytes: bytes | None = None

    def __call__(self, inputs: list[Any]) -> Any:
        if self._function is None:
            raise RuntimeError(f"the {self.role} graph was loaded but never compiled")
        return self._function(inputs)

    def prepare_for_serialization(self) -> None:
        from torch.fx._graph_pickler import GraphPickler, Options

        if self._gm is not None:
            if any(_has_effects(gm) for gm in _graph_modules(self._gm)):
                # AOTAutograd threads effect tokens around such a graph differently when
                # it loads one (as Inductor's graphs take them): not kept
                raise BypassAOTAutogradCache("a graph with effect tokens")
            # any registered op by name (prims and ours too, not only aten's): one the
            # loading process lacks fails the load, which is PyTorch's miss
            options = Options(ops_filter=lambda name: name.startswith("torch.ops."))
            self._graph_bytes = GraphPickler.dumps(self._gm, options)
        self._gm = None
        self._function = None

    def post_compile(
        self, example_inputs: Sequence[Any], constants: Any, graph_kwargs: Any
    ) -> None:
        if self._function is not None:
            return
        from torch._guards import detect_fake_mode
        from torch.fx._graph_pickler import GraphPickler

        # the ops of ours a graph may hold (runtime checks, random bits), registered by
        # the lowering that made them: a process that loads an entry has not lowered yet
        import torchneuron.lowering.checks  # noqa: F401
        import torchneuron.lowering.rules.random  # noqa: F401

        compile_fn = _current_compilers().get(self.role)
        fake_mode = detect_fake_mode(example_inputs)
        if compile_fn is None or fake_mode is None or self._graph_bytes is None:
            raise RuntimeError("an AOTAutograd cache entry of the neuron backend loaded outside it")
        gm = GraphPickler.loads(self._graph_bytes, fake_mode)
        gm.recompile()
        inputs = [node.meta["val"] for node in gm.graph.find_nodes(op="placeholder")]
        self._gm = gm
        self._function = compile_fn(gm, inputs)

    def set_triton_bundle(self, triton_bundle: Any) -> None:
        pass


def _graph_modules(gm: torch.fx.GraphModule) -> list[torch.fx.GraphModule]:
    return [m for m in gm.modules() if isinstance(m, torch.fx.GraphModule)]


def _has_effects(gm: torch.fx.GraphModule) -> bool:
    effects = torch.ops.higher_order.with_effects
    return any(node.target is effects for node in gm.graph.nodes)


_local = threading.local()


def _current_compilers() -> dict[str, Callable]:
    return getattr(_local, "compilers", {})


def serializable(role: str, compile_fn: Callable) -> SerializableAOTDispatchCompiler:
    """``compile_fn`` (``(gm, example_inputs) -> boxed callable``) as an AOTAutograd graph
    compiler whose results PyTorch can keep; ``role`` names it among ``compilers``."""

    def compile_to_output_code(gm: torch.fx.GraphModule, example_inputs) -> NeuronOutputCode:
        return NeuronOutputCode(role, gm, compile_fn(gm, example_inputs))

    return SerializableAOTDispatchCompiler(NeuronOutputCode, compile_to_output_code)


# -- the storage -------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _front_end_fingerprint() -> str:
    """Our compiler's fingerprint and the source of the code that shapes AOTAutograd's
    input and output here (the backend's wiring and this module)."""
    from torchneuron.compiler.cache import compiler_fingerprint

    digest = hashlib.sha256(compiler_fingerprint().encode())
    package = Path(__file__).resolve().parent
    for name in ("backend.py", "aot_cache.py"):
        digest.update((package / name).read_bytes())
    return digest.hexdigest()


def _our_key(torch_key: str) -> str:
    return hashlib.sha256(f"{_front_end_fingerprint()}\0{torch_key}".encode()).hexdigest()


_staging: list[str] = []


def _staging_root() -> str:
    """Where a found entry is put for PyTorch's reader (which lists a folder per key):
    private to this process (``mkdtemp``'s mode 0700), removed at exit."""
    if not _staging:
        _staging.append(tempfile.mkdtemp(prefix="torchneuron-aot-"))
        atexit.register(shutil.rmtree, _staging[0], True)
    return _staging[0]


def _folder_for_key(cls, torch_key: str) -> str:
    """The folder PyTorch reads ``torch_key``'s entries from: for one of our keys, what
    our cache holds for it now, and nothing else (not what an earlier lookup put there);
    for another's, PyTorch's own folder."""
    if not torch_key.startswith(_KEY_PREFIX):
        return os.path.join(cls._get_tmp_dir(), torch_key)
    folder = os.path.join(_staging_root(), hashlib.sha256(torch_key.encode()).hexdigest())
    shutil.rmtree(folder, ignore_errors=True)
    payload = default_cache(AotResultCache).get(_our_key(torch_key))
    if payload is not None:
        os.makedirs(folder)
        with open(os.path.join(folder, "entry"), "wb") as handle:
            handle.write(payload)
    return folder


def _write_entry(torch_key: str, content: bytes) -> None:
    default_cache(AotResultCache).put(_our_key(torch_key), content)


def _ours(function: Any) -> bool:
    """True for a graph compiler's result of ours (through PyTorch's wrappers)."""
    while hasattr(function, "__wrapped__") and not isinstance(function, NeuronOutputCode):
        function = function.__wrapped__
    return isinstance(function, NeuronOutputCode)


def _entry_is_ours(entry: Any) -> bool:
    forward = getattr(entry, "compiled_fw", None)
    return isinstance(getattr(forward, "result", None), NeuronOutputCode)


_installed = threading.Lock()
_originals: dict[str, Any] = {}  # PyTorch's functions the hooks wrap (set once)


def _install_save_hooks() -> None:
    """Route the saving of our entries (and only ours) to our storage, in bundled form.

    A training graph's entry is saved when its backward is compiled, at the first
    ``backward()``: outside our backend's call, so a context around that call cannot
    decide it. The hooks look at what is saved instead: an entry whose forward is a
    ``NeuronOutputCode`` is ours; anything else (Inductor's) goes PyTorch's way, untouched.
    """
    with _installed:
        if _originals:
            return
        from torch._functorch._aot_autograd import graph_compile

        should_save = graph_compile._should_save_cache
        make_entry = AOTAutogradCache.make_entry
        save = AOTAutogradCache.save

        def should_save_ours(*functions: Callable) -> bool:
            return any(_ours(f) for f in functions) or should_save(*functions)

        def make_entry_ours(compiled_fw_func, *args, **kwargs):
            if not _ours(compiled_fw_func):
                return make_entry(compiled_fw_func, *args, **kwargs)
            with torch._functorch.config.patch(bundled_autograd_cache=True):
                return make_entry(compiled_fw_func, *args, **kwargs)

        def save_ours(key: str, entry: Any, remote: bool) -> None:
            if not _entry_is_ours(entry):
                return save(key, entry, remote)
            if not disk_cache_enabled():
                return None
            with (
                torch._functorch.config.patch(bundled_autograd_cache=True),
                _patched(AOTAutogradCache, "_write_to_local_cache", staticmethod(_write_entry)),
            ):
                return save(key, entry, False)

        _originals.update(should_save=should_save, make_entry=make_entry, save=save)
        graph_compile._should_save_cache = should_save_ours
        AOTAutogradCache.make_entry = staticmethod(make_entry_ours)
        AOTAutogradCache.save = staticmethod(save_ours)


_KEY_PREFIX = "neuron"


def _key_of(graph_key: str, graph: torch.fx.GraphModule) -> Callable:
    """PyTorch's ``autograd_cache_key`` for our backend: the Dynamo graph's key (the
    backend's ``_dynamo_graph_key``: its code, its inputs' metadata, grad, autocast and
    deterministic modes, our options) plus what else shapes AOTAutograd's output.
    PyTorch's own key digests the same graph and Inductor's configuration, and to do so
    imports Inductor's code generators and hashes PyTorch's sources: 3.2 s of a warm
    GPT's first step here, more than half of what the entry saves."""

    def key(mod, example_inputs, aot_config, compiler_config_extra=None):
        from torch._dynamo.utils import GmWrapper

        if (mod.gm if isinstance(mod, GmWrapper) else mod) is not graph:  # not ours
            raise BypassAOTAutogradCache("not the neuron backend's graph")
        cacheable = aot_config.to_cacheable()
        parts = (
            graph_key,
            torch.__version__,
            torch.version.git_version,
            hashlib.sha256(torch._functorch.config.save_config()).hexdigest(),
            cacheable.num_params_buffers,
            cacheable.keep_inference_input_mutations,
            cacheable.is_export,
            cacheable.no_tangents,
            cacheable.dynamic_shapes,
            cacheable.static_input_indices,
            cacheable.pre_dispatch,
        )
        return _KEY_PREFIX + hashlib.sha256(repr(parts).encode()).hexdigest(), []

    return key


@contextlib.contextmanager
def storing_in_our_cache(
    compilers: dict[str, Callable], graph: torch.fx.GraphModule, graph_key: str | None
) -> Iterator[None]:
    """Around our backend's AOTAutograd call on ``graph``: PyTorch's cache of AOTAutograd
    results on, read from ours; ``compilers`` (by role) compile what an entry holds.
    ``graph_key``: the backend's key of the Dynamo graph; None (a graph no key describes
    safely: state held by the module, symbolic sizes) turns the cache off for it."""
    if graph_key is None or not disk_cache_enabled():
        with torch._functorch.config.patch(enable_autograd_cache=False):
            yield
        return
    from torch._functorch._aot_autograd import autograd_cache

    _install_save_hooks()
    previous = getattr(_local, "compilers", None)
    _local.compilers = compilers
    try:
        with (
            torch._functorch.config.patch(enable_autograd_cache=True),
            _patched(autograd_cache, "autograd_cache_key", _key_of(graph_key, graph)),
            _patched(AOTAutogradCache, "_get_tmp_dir_for_key", classmethod(_folder_for_key)),
        ):
            yield
    finally:
        _local.compilers = previous


@contextlib.contextmanager
def _patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    """``owner.name`` (a module's or a class's, descriptors kept) set to ``value`` for the
    block. Dynamo compiles one frame at a time (its compile lock), so no other compile
    of ours sees another's."""
    before = vars(owner)[name]
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, before)
