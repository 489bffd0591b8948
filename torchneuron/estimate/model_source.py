"""The user's model for ``neuronc plan --model``: where it comes from and how it is built
without its weights.

Three kinds of source (``parse_source``):

- ``hf:path/to/config.json`` (or the folder holding it): a Hugging Face configuration.
  The class named first in its ``architectures`` (``LlamaForCausalLM``, ...) is taken
  from ``transformers`` and built from the configuration; nothing is downloaded.
- ``package.module:factory``: a Python callable returning an ``nn.Module`` (the user's
  code, imported and called as the user would).
- ``model.pt2``: a program saved with ``torch.export.save``.

A source builds its model under a ``FakeTensorMode`` (parameters are fake tensors:
shapes and dtypes, no memory, no initialisation work), so an 8B or 70B model is built in
seconds and a few hundred MB of host memory. ``ModelSource.parameter_count`` builds it on
the meta device instead (faster still) and counts what it holds.

A configuration file is read as hostile input: its size is bounded and every field the
planner reads is checked, with an error that names the file and the field.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

from torchneuron.estimate.plan_types import PlanError

CONFIG_LIMIT_BYTES = 1 << 20  # a Hugging Face config.json is a few KB

# Configuration fields that tensor parallelism divides, by model type (Megatron's layout:
# attention by heads, the MLP by its hidden width, embedding and head by vocabulary). A
# model type outside this table plans with --tp 1 only: sharding one we do not know the
# fields of would be a guess.
TP_FIELDS = {
    "llama": ("num_attention_heads", "num_key_value_heads", "intermediate_size"),
    "mistral": ("num_attention_heads", "num_key_value_heads", "intermediate_size"),
    "mixtral": ("num_attention_heads", "num_key_value_heads", "intermediate_size"),
    "qwen2": ("num_attention_heads", "num_key_value_heads", "intermediate_size"),
    "qwen3": ("num_attention_heads", "num_key_value_heads", "intermediate_size"),
}
EXPERT_FIELDS = {"mixtral": "num_local_experts"}


@dataclass(frozen=True)
class ModelSource:
    """Where the model comes from: ``kind`` is "hf", "factory" or "pt2"."""

    kind: str
    text: str  # as the user wrote it
    path: Path | None = None
    config: dict | None = None  # the parsed config.json ("hf")

    @property
    def name(self) -> str:
        if self.kind == "hf":
            named = self.config.get("_name_or_path")
            if isinstance(named, str) and named:
                return named
            return self.path.parent.name if self.path.stem == "config" else self.path.stem
        if self.kind == "pt2":
            return self.path.stem
        return self.text

    @property
    def architecture(self) -> str | None:
        return self.config["architectures"][0] if self.kind == "hf" else None

    @property
    def model_type(self) -> str | None:
        return self.config.get("model_type") if self.kind == "hf" else None

    def hf_config(self, tp: int = 1, ep: int = 1, layers: int | None = None):
        """The ``transformers`` configuration, its TP-sharded fields divided by ``tp``,
        its experts by ``ep`` and its layers cut to ``layers`` (what one rank holds of one
        traced piece)."""
        import transformers

        data = copy.deepcopy(self.config)
        data.pop("architectures", None)
        model_type = data.pop("model_type")
        if tp > 1 or ep > 1:
            _shard_fields(self, data, tp, ep)
        if layers is not None:
            data["num_hidden_layers"] = layers
            for key in ("layer_types", "mlp_only_layers"):
                if isinstance(data.get(key), list):
                    data[key] = data[key][:layers]
        try:
            return transformers.AutoConfig.for_model(model_type, **data)
        except (ValueError, TypeError, KeyError) as error:
            raise PlanError(
                f"{self.path}: transformers refuses this configuration: {error}"
            ) from None

    def build(self, tp: int = 1, ep: int = 1, layers: int | None = None):
        """The model (training mode), built under the current fake or meta context."""
        import torch

        if self.kind == "hf":
            cls = _architecture_class(self)
            config = self.hf_config(tp, ep, layers)
            config._attn_implementation = "sdpa"
            model = cls(config)
        elif self.kind == "factory":
            if tp > 1 or ep > 1 or layers is not None:
                raise PlanError(
                    f"{self.text}: --tp and --ep need a model whose sharding the planner "
                    "knows (an hf: configuration of a model type in TP_FIELDS); a factory's "
                    "model is planned whole on each rank"
                )
            model = _call_factory(self.text)
        else:
            if tp > 1 or ep > 1:
                raise PlanError(f"{self.path}: --tp and --ep are not planned for a .pt2 program")
            # An exported program's module runs as it was exported (no train() switch).
            return torch.export.load(str(self.path)).module()
        model.train()
        return model

    def parameter_count(self) -> int:
        """Elements of every parameter of the whole model (built on the meta device)."""
        import torch

        if self.kind == "pt2":
            model = self.build()
        else:
            with torch.device("meta"), _no_init():
                model = self.build()
        return sum(p.numel() for p in model.parameters())


def parse_source(text: str) -> ModelSource:
    """A ``ModelSource`` from ``--model``'s text; ``PlanError`` naming what is wrong."""
    if text.startswith("hf:"):
        return _hf_source(text)
    if text.endswith(".pt2"):
        path = Path(text)
        if not path.is_file():
            raise PlanError(f"--model {text}: no such file")
        return ModelSource("pt2", text, path=path)
    module, sep, factory = text.partition(":")
    if not sep or not module or not factory.isidentifier():
        raise PlanError(
            f"--model {text!r}: expected hf:path/to/config.json, package.module:factory "
            "or a .pt2 file saved with torch.export.save"
        )
    return ModelSource("factory", text)


def _hf_source(text: str) -> ModelSource:
    path = Path(text[len("hf:") :])
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise PlanError(f"--model {text}: no configuration file at {path}")
    size = path.stat().st_size
    if size > CONFIG_LIMIT_BYTES:
        raise PlanError(f"{path}: {size} bytes; a model configuration is at most 1 MiB")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PlanError(f"{path}: not a JSON configuration ({error})") from None
    if not isinstance(config, dict):
        raise PlanError(f"{path}: a configuration is a JSON object, not {type(config).__name__}")
    architectures = config.get("architectures")
    if not (
        isinstance(architectures, list)
        and architectures
        and all(isinstance(a, str) and a.isidentifier() for a in architectures)
    ):
        raise PlanError(
            f"{path}: 'architectures' must be a list naming the model class, such as "
            '["LlamaForCausalLM"]'
        )
    if not isinstance(config.get("model_type"), str):
        raise PlanError(f"{path}: 'model_type' (such as \"llama\") is missing or not a string")
    source = ModelSource("hf", text, path=path, config=config)
    _architecture_class(source)
    return source


def _architecture_class(source: ModelSource):
    try:
        import transformers
    except ImportError:
        raise PlanError(
            f"--model {source.text}: planning a Hugging Face configuration needs the "
            "transformers package (pip install transformers)"
        ) from None
    cls = getattr(transformers, source.architecture, None)
    if not (isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel)):
        raise PlanError(
            f"{source.path}: architecture {source.architecture!r} is not a model class of "
            f"transformers {transformers.__version__}"
        )
    return cls


def _shard_fields(source: ModelSource, data: dict, tp: int, ep: int) -> None:
    """Divide the configuration's sharded fields in place (one rank's share)."""
    model_type = data.get("model_type") or source.model_type
    if tp > 1:
        fields = TP_FIELDS.get(model_type)
        if fields is None:
            raise PlanError(
                f"{source.path}: --tp {tp} for model type {model_type!r}: the planner "
                f"shards only {', '.join(sorted(TP_FIELDS))} (their attention, MLP and "
                "vocabulary); plan this model with --tp 1"
            )
        heads = _positive(source, data, "num_attention_heads")
        data.setdefault("head_dim", _positive(source, data, "hidden_size") // heads)
        data.setdefault("num_key_value_heads", heads)
        for field in fields:
            size = _positive(source, data, field)
            if field == "num_key_value_heads" and size < tp and tp % size == 0:
                data[field] = 1  # fewer KV heads than ranks: each rank holds one, replicated
            elif size % tp:
                raise PlanError(f"--tp {tp} does not divide the model's {field} ({size})")
            else:
                data[field] = size // tp
        data["vocab_size"] = math.ceil(_positive(source, data, "vocab_size") / tp)
    if ep > 1:
        field = EXPERT_FIELDS.get(model_type)
        if field is None:
            raise PlanError(f"{source.path}: --ep {ep}: model type {model_type!r} has no experts")
        experts = _positive(source, data, field)
        if experts % ep:
            raise PlanError(f"--ep {ep} does not divide the model's {experts} experts ({field})")


def _positive(source: ModelSource, data: dict, field: str) -> int:
    value = data.get(field)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise PlanError(f"{source.path}: {field!r} must be a positive integer, not {value!r}")
    return value


def _call_factory(text: str):
    import torch

    module_name, _, factory_name = text.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise PlanError(f"--model {text}: cannot import {module_name}: {error}") from None
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise PlanError(f"--model {text}: {module_name} has no callable {factory_name!r}")
    model = factory()
    if not isinstance(model, torch.nn.Module):
        raise PlanError(f"--model {text}: returned {type(model).__name__}, not an nn.Module")
    return model


@contextlib.contextmanager
def _no_init():
    """Skip ``transformers``' weight initialisation (meta tensors hold no values)."""
    try:
        from transformers.modeling_utils import no_init_weights
    except ImportError:
        yield
        return
    with no_init_weights():
        yield
