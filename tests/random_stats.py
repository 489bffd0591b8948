"""Distribution checks for random ops: samples are tested by statistics, not by values.

Every check fails at a significance far below any the tests could hit by chance
(p < 1e-6, about 5 sigma), and the tests seed their draws, so a pass or a failure
repeats exactly. The reference distributions are written here as CDFs and
probability tables.
"""

from __future__ import annotations

import math

import torch

ALPHA = 1e-6  # the p-value below which a sample is declared not from the distribution


def kolmogorov_pvalue(samples: torch.Tensor, cdf) -> float:
    """p-value of the one-sample Kolmogorov-Smirnov test (asymptotic form)."""
    x, _ = samples.double().flatten().sort()
    n = x.numel()
    f = cdf(x)
    ranks = torch.arange(1, n + 1, dtype=torch.float64)
    d = max((ranks / n - f).max().item(), (f - (ranks - 1) / n).max().item())
    root = math.sqrt(n)
    lam = (root + 0.12 + 0.11 / root) * d
    return min(
        1.0,
        max(0.0, 2 * sum((-1) ** (k - 1) * math.exp(-2 * (k * lam) ** 2) for k in range(1, 101))),
    )


def chi_square_pvalue(counts: torch.Tensor, probabilities: torch.Tensor) -> float:
    """p-value of Pearson's chi-square test of ``counts`` against ``probabilities``."""
    counts = counts.double()
    expected = probabilities.double() * counts.sum()
    assert (expected >= 5).all(), "merge categories: the test needs >= 5 expected per bin"
    statistic = ((counts - expected) ** 2 / expected).sum().item()
    dof = counts.numel() - 1
    # Wilson-Hilferty: (X / k)^(1/3) is nearly normal
    z = ((statistic / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
    return 0.5 * math.erfc(z / math.sqrt(2))


def assert_follows(samples: torch.Tensor, cdf, what: str = "") -> None:
    assert torch.isfinite(samples).all(), f"{what}: non-finite samples"
    p = kolmogorov_pvalue(samples, cdf)
    assert p > ALPHA, f"{what}: KS p-value {p:.3g}"


def assert_counts_follow(samples: torch.Tensor, probabilities: dict, what: str = "") -> None:
    """Discrete samples against {value: probability}; the values must cover every sample."""
    values = torch.tensor(list(probabilities), dtype=torch.float64)
    flat = samples.double().flatten()
    counts = (flat[:, None] == values[None, :]).sum(0)
    assert counts.sum() == flat.numel(), f"{what}: samples outside {sorted(probabilities)}"
    p = chi_square_pvalue(counts, torch.tensor(list(probabilities.values())))
    assert p > ALPHA, f"{what}: chi-square p-value {p:.3g} (counts {counts.tolist()})"


def assert_mean(samples: torch.Tensor, mean: float, std: float, what: str = "") -> None:
    """The sample mean within 5 standard errors of ``mean``."""
    got = samples.double().mean().item()
    bound = 5 * std / math.sqrt(samples.numel())
    assert abs(got - mean) <= bound, f"{what}: mean {got:.5g}, expected {mean:.5g} +- {bound:.3g}"


# -- reference distributions --------------------------------------------------------------


def uniform_cdf(low: float = 0.0, high: float = 1.0):
    return lambda x: ((x - low) / (high - low)).clamp(0, 1)


def normal_cdf(mean: float = 0.0, std: float = 1.0):
    return lambda x: 0.5 * torch.erfc(-(x - mean) / (std * math.sqrt(2)))


def exponential_cdf(rate: float):
    return lambda x: 1 - torch.exp(-rate * x.clamp_min(0))


def cauchy_cdf(median: float, sigma: float):
    return lambda x: 0.5 + torch.atan((x - median) / sigma) / math.pi


def log_normal_cdf(mean: float, std: float):
    return lambda x: normal_cdf(mean, std)(torch.log(x.clamp_min(1e-300)))


def geometric_probabilities(p: float, last: int) -> dict:
    """P(X = k) for k = 1..last-1 and the tail P(X >= last) folded into ``last``."""
    table = {k: (1 - p) ** (k - 1) * p for k in range(1, last)}
    table[last] = (1 - p) ** (last - 1)
    return table


def uniform_integers(low: int, high: int) -> dict:
    return {k: 1 / (high - low) for k in range(low, high)}


# -- the cases: every random op, as a function of a tensor of ones and a check of its samples ----

N = 20_000


def _check_dropout(p: float):
    def check(samples):
        assert_counts_follow(samples, {0.0: p, float(torch.tensor(1 / (1 - p))): 1 - p}, "dropout")

    return check


def _check_alpha_dropout(samples):
    # dropped elements take one value, kept ones another: which is which by frequency
    values, counts = samples.unique(return_counts=True)
    assert values.numel() == 2, f"alpha dropout gave values {values.tolist()}"
    dropped = values[counts.argmin()].item()
    assert_counts_follow((samples == dropped).double(), {0.0: 0.7, 1.0: 0.3}, "alpha_dropout")


def _check_dropout2d(samples):
    channels = samples.reshape(-1, 4)  # each 2x2 channel is zeroed or kept whole
    zero = (channels == 0).all(1)
    assert (zero | (channels == 1 / 0.7).all(1)).all(), "a channel was partly dropped"
    assert_counts_follow(zero.double(), {0.0: 0.7, 1.0: 0.3}, "dropout2d")


def _check_multinomial_with_replacement(samples):
    assert_counts_follow(samples, {0: 0.1, 1: 0.2, 2: 0.3, 3: 0.4}, "multinomial")


def _check_multinomial_without_replacement(samples):
    assert (samples[:, 0] != samples[:, 1]).all(), "a category drawn twice"
    assert (samples != 4).all(), "a category of weight 0 drawn"
    assert_counts_follow(samples[:, 0], {0: 0.1, 1: 0.2, 2: 0.3, 3: 0.4}, "first draw")


def _check_sdpa_dropout(samples):
    # equal scores and values of one: each output is kept/16/(1 - p) with kept ~ B(16, 0.7)
    kept = samples[..., 0].flatten() * 16 * 0.7
    assert torch.allclose(kept, kept.round(), atol=1e-4), "outputs are not multiples of 1/11.2"
    binomial = {k: math.comb(16, k) * 0.7**k * 0.3 ** (16 - k) for k in range(16 + 1)}
    table = {k: binomial[k] for k in range(9, 15)}  # 8 and 15 stand for the tails
    table[8] = sum(binomial[k] for k in range(0, 9))
    table[15] = binomial[15] + binomial[16]
    assert_counts_follow(kept.round().clamp(8, 15), table, "sdpa dropout")


def _sdpa(x):
    q = x[:10000].reshape(1, 1, 1250, 8)
    kv = x[:128].reshape(1, 1, 16, 8)
    return torch.nn.functional.scaled_dot_product_attention(q, kv, kv, dropout_p=0.3)


def _check_exponential(samples):
    assert (samples > 0).all(), "an exponential sample of 0"
    assert_follows(samples, exponential_cdf(2.0), "exponential")


def _check_geometric(samples):
    assert (samples >= 1).all(), "a geometric sample below 1"
    assert_counts_follow(samples.clamp(max=12), geometric_probabilities(0.3, 12), "geometric")


def _bernoulli_check(samples, p):
    assert_counts_follow(samples, {0.0: 1 - p, 1.0: p}, "bernoulli")


def _uniform_of(low, high):
    return lambda s: assert_follows(s, uniform_cdf(low, high))


def _normal_of(mean, std):
    return lambda s: assert_follows(s, normal_cdf(mean, std))


def _integers(low, high):
    return lambda s: assert_counts_follow(s, uniform_integers(low, high))


def _bits_below_one(s):
    assert (s < 1).all() and (s >= 0).all()
    assert_follows(s, uniform_cdf())


W = [1.0, 2.0, 3.0, 4.0, 0.0]

# name -> (function of x = ones(N) on the device under test, check of its samples)
CASES = {
    "rand": (lambda x: torch.rand(N, device=x.device), _uniform_of(0, 1)),
    "rand_like-float64": (lambda x: torch.rand_like(x, dtype=torch.float64), _bits_below_one),
    "uniform_": (lambda x: x.clone().uniform_(-2, 3), _uniform_of(-2, 3)),
    "randn": (lambda x: torch.randn(N, device=x.device), _normal_of(0, 1)),
    "randn_like-float64": (lambda x: torch.randn_like(x.double()), _normal_of(0, 1)),
    "normal_": (lambda x: x.clone().normal_(2, 3), _normal_of(2, 3)),
    "normal_-float64": (lambda x: x.double().normal_(-1, 0.5), _normal_of(-1, 0.5)),
    "normal-tensor-mean": (lambda x: torch.normal(x * 2, 3.0), _normal_of(2, 3)),
    "normal-tensor-std": (lambda x: torch.normal(2.0, x * 3), _normal_of(2, 3)),
    "exponential_": (lambda x: x.clone().exponential_(2.0), _check_exponential),
    "cauchy_": (
        lambda x: x.clone().cauchy_(1.0, 2.0),
        lambda s: assert_follows(s, cauchy_cdf(1, 2)),
    ),
    "log_normal_": (
        lambda x: x.clone().log_normal_(0.5, 0.75),
        lambda s: assert_follows(s, log_normal_cdf(0.5, 0.75)),
    ),
    "geometric_": (lambda x: x.clone().geometric_(0.3), _check_geometric),
    "bernoulli": (lambda x: torch.bernoulli(x * 0.3), lambda s: _bernoulli_check(s, 0.3)),
    "bernoulli_-p": (lambda x: x.clone().bernoulli_(0.3), lambda s: _bernoulli_check(s, 0.3)),
    "bernoulli_-tiny-p": (
        lambda x: x.clone().bernoulli_(1e-3),
        lambda s: _bernoulli_check(s, 1e-3),
    ),
    "randint": (lambda x: torch.randint(3, 10, (N,), device=x.device), _integers(3, 10)),
    "randint_like": (lambda x: torch.randint_like(x, 7), _integers(0, 7)),
    "randint-wide": (
        lambda x: torch.randint(-(2**30), 2**30 - 1, (N,), device=x.device),
        lambda s: assert_follows((s.double() + 2**30) / (2**31 - 1), uniform_cdf()),
    ),
    "random_-bounds": (lambda x: x.clone().random_(-2, 3), _integers(-2, 3)),
    "random_-uint8": (lambda x: x.to(torch.uint8).random_(), _integers(0, 256)),
    "multinomial-replacement": (
        lambda x: torch.multinomial(x[:5] * torch.tensor(W, device=x.device), N, True),
        _check_multinomial_with_replacement,
    ),
    "multinomial-no-replacement": (
        lambda x: torch.multinomial((x[:5] * torch.tensor(W, device=x.device)).expand(4000, 5), 2),
        _check_multinomial_without_replacement,
    ),
    "dropout": (lambda x: torch.nn.functional.dropout(x, 0.3, True), _check_dropout(0.3)),
    "alpha_dropout": (
        lambda x: torch.nn.functional.alpha_dropout(x, 0.3, True),
        _check_alpha_dropout,
    ),
    "dropout2d": (
        lambda x: torch.nn.functional.dropout2d(x.reshape(50, 100, 2, 2), 0.3, True),
        _check_dropout2d,
    ),
    "rrelu": (
        lambda x: torch.nn.functional.rrelu(-x, 0.1, 0.3, training=True),
        lambda s: assert_follows(-s, uniform_cdf(0.1, 0.3)),
    ),
    "sdpa-dropout": (_sdpa, _check_sdpa_dropout),
}
