"""The ``torch.backends`` entry point: what ``import torch`` registers.

PyTorch calls ``autoload()`` at the end of ``import torch``
(``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` turns that off; ``import torchneuron`` then does
it). It registers the ``neuron`` device (``torchneuron.device``), the ``neuron``
torch.compile backend and, when the device registered, the ``neuron`` process-group
backend (``torchneuron.distributed``). It never breaks ``import torch``: a failure
becomes a warning.

The compile backend. Dynamo finds it through the ``torch_dynamo_backends`` entry point
on the first ``torch.compile(backend="neuron")``, but its lookup is not thread-safe:
two threads making their first call at once both load the entry point and the second
registration fails with ``AssertionError: duplicate name: neuron``. So the name is
registered here, once, while Dynamo's registry module is imported (under that module's
import lock, before any lookup can run), or at once when the registry is already
loaded. Importing Dynamo costs about a second, so ``import torch`` never does it: a
one-shot import hook waits for the registry.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable
from importlib.abc import MetaPathFinder
from types import ModuleType

DYNAMO_REGISTRY = "torch._dynamo.backends.registry"
BACKEND_NAME = "neuron"
LOG_NAME = "neuron"  # TORCH_LOGS="+neuron"

_backend_lock = threading.Lock()
_hook: _AfterImport | None = None  # waiting for Dynamo's registry to be imported


def autoload() -> None:
    # The registration submodule, not the package: ``import torchneuron.device`` imports
    # torch, whose autoload lands here while that package is still half-initialised.
    from torchneuron.device.registration import autoload as autoload_device
    from torchneuron.device.registration import is_registered

    register_compile_backend()
    _register_log()
    autoload_device()
    if not is_registered():
        return
    _eager_check_from_environment()
    _after_import(FLEX_MODULE, _allow_flex_attention)
    try:
        from torchneuron import distributed

        distributed.register()
    except Exception as error:  # never break `import torch`
        warnings.warn(
            f"torchneuron: the 'neuron' process-group backend could not be registered "
            f"({type(error).__name__}: {error}); torch.distributed cannot use it in this "
            "process.",
            RuntimeWarning,
            stacklevel=2,
        )


def _register_log() -> None:
    """``TORCH_LOGS="+neuron"`` reaches the ``torchneuron`` logger (the compiler's
    ``compiler/observe.py`` writes to it). torch parses ``TORCH_LOGS`` after the autoload;
    when torch was imported first, it is parsed again here. Nothing of ours is imported."""
    import os

    try:
        from torch._logging import _internal

        if LOG_NAME in _internal.log_registry.log_alias_to_log_qnames:
            return
        _internal.register_log(LOG_NAME, "torchneuron")
        if LOG_NAME in os.environ.get("TORCH_LOGS", ""):
            _internal._init_logs()
    except Exception as error:  # never break `import torch`
        warnings.warn(
            f"torchneuron: TORCH_LOGS cannot name 'neuron' in this process "
            f"({type(error).__name__}: {error})",
            RuntimeWarning,
            stacklevel=2,
        )


def neuron(gm, example_inputs, **kwargs):
    """The ``neuron`` torch.compile backend as Dynamo's registry holds it: loads the
    backend (``torchneuron.backend.neuron_backend``) on the first compile."""
    from torchneuron.backend import neuron_backend

    return neuron_backend(gm, example_inputs, **kwargs)


def register_compile_backend() -> None:
    """Register ``neuron`` with Dynamo's backend registry, once; thread-safe, idempotent."""
    global _hook
    with _backend_lock:
        if DYNAMO_REGISTRY not in sys.modules:
            if _hook is None:
                _hook = _AfterImport(DYNAMO_REGISTRY, _register_with)
                sys.meta_path.insert(0, _hook)
            return  # the hook registers when the registry is imported
    _register_with(sys.modules[DYNAMO_REGISTRY])


def _register_with(registry: ModuleType) -> None:
    try:
        with _backend_lock:
            if BACKEND_NAME not in registry._COMPILER_FNS:
                registry.register_backend(neuron, name=BACKEND_NAME)
    except Exception as error:  # never break `import torch` or `import torch._dynamo`
        warnings.warn(
            f"torchneuron: the 'neuron' torch.compile backend could not be registered up "
            f"front ({type(error).__name__}: {error}); Dynamo loads it through its entry "
            "point instead, and two threads compiling first at once may collide.",
            RuntimeWarning,
            stacklevel=2,
        )


FLEX_MODULE = "torch.nn.attention.flex_attention"


def _allow_flex_attention(module: ModuleType) -> None:
    """FlexAttention takes ``neuron`` tensors (its device check lists the devices it
    knows): compiled, it lowers as dense masked attention (compiler/flex_attention.py)."""
    try:
        from torchneuron.compiler.flex_attention import allow_neuron_inputs

        allow_neuron_inputs(module)
    except Exception as error:  # never break the user's import
        warnings.warn(
            f"torchneuron: flex_attention will not take neuron tensors ({error})",
            RuntimeWarning,
            stacklevel=2,
        )


def _after_import(name: str, then: Callable[[ModuleType], None]) -> None:
    """``then(module)`` now if ``name`` is imported, else right after its import."""
    module = sys.modules.get(name)
    if module is not None:
        then(module)
    else:
        sys.meta_path.insert(0, _AfterImport(name, then))


class _AfterImport(MetaPathFinder):
    """A one-shot ``sys.meta_path`` finder: runs ``then(module)`` right after module
    ``name`` is executed, still under that module's import lock."""

    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self.name, self.then = name, then

    def remove(self) -> None:
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass  # already fired

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        self.remove()
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        loader, then = spec.loader, self.then
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            then(module)

        loader.exec_module = exec_module
        return spec


def _eager_check_from_environment() -> None:
    """``TORCHNEURON_CHECK=1``: eager ops are checked against the CPU from the start."""
    try:
        from torchneuron import settings

        if settings.env_flag(settings.CHECK):
            from torchneuron.check import set_eager_check

            set_eager_check(True)
    except Exception as error:  # never break `import torch`
        warnings.warn(
            f"torchneuron: check mode is off: {type(error).__name__}: {error}",
            RuntimeWarning,
            stacklevel=2,
        )
