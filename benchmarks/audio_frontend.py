"""A log-mel spectrogram front end and a small conformer-style audio encoder on neuron.

Complex values run as real pairs and the STFT as DFT matmuls (docs/complex-fft.md).
Two models, each run as eager CPU, Inductor (CPU), eager neuron and compiled neuron
(``torch.compile(backend="neuron")``) in one process, single-threaded, every output
checked against eager CPU first:

- ``frontend``: 1 s of 16 kHz audio, batch 4: ``torch.stft`` (n_fft 400, hop 160, Hann
  window) -> power ``|X|^2`` -> 80-band mel matmul -> ``log(. + 1e-6)``;
- ``encoder``: the front end followed by a conformer-style encoder (conv subsampling
  x4, 2 blocks of d=144, 4 heads: half-step FFN, self-attention, depthwise-conv module,
  half-step FFN, layer norm).

Prints the median latency of each engine, the compile time (first call) of the two
compiled engines, and the cost model's estimate of the compiled front end.

    python benchmarks/audio_frontend.py [--repeats 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TORCHNEURON_XLA_SINGLE_THREADED", "1")
os.environ.setdefault("TORCHNEURON_NO_FALLBACK", "1")
os.environ.setdefault("TORCHNEURON_CACHE_DIR", tempfile.mkdtemp(prefix="torchneuron-bench-"))
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-bench-"))

import torch
from torch import nn

import torchneuron  # noqa: F401  (registers the backend)

SAMPLE_RATE = 16000
N_FFT = 400
HOP = 160
N_MELS = 80


def mel_filterbank(n_freqs: int, n_mels: int, sample_rate: int) -> torch.Tensor:
    """Triangular HTK mel filters ``[n_freqs, n_mels]`` (as torchaudio's melscale_fbanks)."""

    def to_mel(f):
        return 2595.0 * torch.log10(1.0 + f / 700.0)

    def to_hz(m):
        return 700.0 * (10 ** (m / 2595.0) - 1.0)

    freqs = torch.linspace(0, sample_rate / 2, n_freqs, dtype=torch.float64)
    points = to_hz(
        torch.linspace(
            to_mel(torch.tensor(0.0)),
            to_mel(torch.tensor(sample_rate / 2)),
            n_mels + 2,
            dtype=torch.float64,
        )
    )
    lower, center, upper = points[:-2], points[1:-1], points[2:]
    up = (freqs[:, None] - lower) / (center - lower)
    down = (upper - freqs[:, None]) / (upper - center)
    return torch.clamp(torch.minimum(up, down), min=0).to(torch.float32)


class LogMel(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(N_FFT))
        self.register_buffer("mel", mel_filterbank(N_FFT // 2 + 1, N_MELS, SAMPLE_RATE))

    def forward(self, audio):  # [B, T] -> [B, frames, mels]
        spec = torch.stft(audio, N_FFT, hop_length=HOP, window=self.window, return_complex=True)
        power = spec.real.pow(2) + spec.imag.pow(2)  # [B, freqs, frames]
        return torch.log(power.transpose(1, 2) @ self.mel + 1e-6)


class ConformerBlock(nn.Module):
    def __init__(self, d: int, heads: int, kernel: int = 15):
        super().__init__()
        self.ff1 = nn.Sequential(
            nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d)
        )
        self.attn_norm = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.conv_norm = nn.LayerNorm(d)
        self.pointwise1 = nn.Conv1d(d, 2 * d, 1)
        self.depthwise = nn.Conv1d(d, d, kernel, padding=kernel // 2, groups=d)
        self.conv_bn = nn.BatchNorm1d(d)
        self.pointwise2 = nn.Conv1d(d, d, 1)
        self.ff2 = nn.Sequential(
            nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d)
        )
        self.out_norm = nn.LayerNorm(d)

    def forward(self, x):
        x = x + 0.5 * self.ff1(x)
        h = self.attn_norm(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        h = self.conv_norm(x).transpose(1, 2)
        h = nn.functional.glu(self.pointwise1(h), dim=1)
        h = self.pointwise2(nn.functional.silu(self.conv_bn(self.depthwise(h))))
        x = x + h.transpose(1, 2)
        x = x + 0.5 * self.ff2(x)
        return self.out_norm(x)


class Encoder(nn.Module):
    def __init__(self, d: int = 144, heads: int = 4, blocks: int = 2):
        super().__init__()
        self.frontend = LogMel()
        self.subsample = nn.Sequential(
            nn.Conv2d(1, d, 3, stride=2), nn.ReLU(), nn.Conv2d(d, d, 3, stride=2), nn.ReLU()
        )
        self.project = nn.Linear(d * (((N_MELS - 1) // 2 - 1) // 2), d)
        self.blocks = nn.Sequential(*(ConformerBlock(d, heads) for _ in range(blocks)))

    def forward(self, audio):
        features = self.frontend(audio).unsqueeze(1)  # [B, 1, frames, mels]
        h = self.subsample(features)  # [B, d, frames/4, mels/4]
        b, c, t, f = h.shape
        h = self.project(h.permute(0, 2, 1, 3).reshape(b, t, c * f))
        return self.blocks(h)


def median_ms(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def first_call_s(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(name: str, model: nn.Module, audio: torch.Tensor, repeats: int) -> None:
    model.eval()
    device_model = type(model)().eval()
    device_model.load_state_dict(model.state_dict())
    device_model.to("neuron")
    device_audio = audio.to("neuron")
    inductor = torch.compile(model, backend="inductor")
    compiled = torch.compile(device_model, backend="neuron", dynamic=False)
    with torch.no_grad():
        expected = model(audio)
        engines = {
            "eager CPU": lambda: model(audio),
            "Inductor CPU": lambda: inductor(audio),
            "eager neuron": lambda: device_model(device_audio).cpu(),
            "compiled neuron": lambda: compiled(device_audio).cpu(),
        }
        compile_times = {
            "Inductor CPU": first_call_s(engines["Inductor CPU"]),
            "compiled neuron": first_call_s(engines["compiled neuron"]),
        }
        for engine, fn in engines.items():
            got = fn()
            error = (got - expected).abs().max().item()
            scale = expected.abs().max().item()
            assert error <= 1e-3 * max(scale, 1.0), f"{name} {engine}: max error {error}"
        print(f"\n{name}: output {tuple(expected.shape)}, median of {repeats} calls")
        print(f"{'engine':18s} {'latency ms':>11s} {'vs eager CPU':>13s} {'first call s':>13s}")
        base = None
        for engine, fn in engines.items():
            ms = median_ms(fn, repeats)
            base = base or ms
            first = compile_times.get(engine)
            first_text = f"{first:13.1f}" if first is not None else f"{'':13s}"
            print(f"{engine:18s} {ms:11.2f} {base / ms:12.2f}x {first_text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--part", choices=("frontend", "encoder", "all"), default="all")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    audio = torch.randn(4, SAMPLE_RATE)
    if args.part in ("frontend", "all"):
        run("log-mel front end", LogMel(), audio, args.repeats)
    if args.part in ("encoder", "all"):
        run("conformer-style encoder", Encoder(), audio, args.repeats)


if __name__ == "__main__":
    main()
