"""Reductions: sum, mean, max, argmax, var, norm, and their relatives."""

import pytest
import torch

from conftest import FLOATS, check, randint, randn, skip_bf16_if_unsupported

REDUCTIONS = {
    "sum": lambda x: (x.sum(), x.sum(0), x.sum(1), x.sum(1, keepdim=True)),
    "mean": lambda x: (x.mean(), x.mean(0), x.mean(1)),
    "max": lambda x: (x.max(), x.max(0).values, x.max(1).values, x.amax(1)),
    "min": lambda x: (x.min(), x.min(1).values, x.amin(0)),
    "var": lambda x: (x.float().var(), x.float().var(1), x.float().var(0, correction=0)),
    "std": lambda x: (x.float().std(), x.float().std(1)),
    "norm": lambda x: (x.norm(), x.norm(dim=1), torch.linalg.vector_norm(x.float(), 1),
                       torch.linalg.vector_norm(x.float(), float("inf"), dim=0)),
    "prod": lambda x: (x[:, :8].prod(1),),
    "logsumexp": lambda x: (torch.logsumexp(x.float(), 1),),
    "cumsum": lambda x: (x.float().cumsum(1),),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction(name, dtype):
    skip_bf16_if_unsupported(dtype)
    check(REDUCTIONS[name], randn(64, 50, dtype=dtype, seed=1), kind="reduction", msg=name)


def test_long_vector():
    # One reduction over a few thousand elements (a block-level then a grid-level pass).
    check(lambda x: (x.sum(), x.mean(), x.var(), x.norm(), x.max()), randn(4099, seed=2), kind="reduction")


def test_argmax_argmin():
    # Distinct values, so that the index of the extreme is unique.
    x = torch.randperm(3000, generator=torch.Generator().manual_seed(3)).float().view(60, 50)

    def f(x):
        return x.argmax(), x.argmax(0), x.argmax(1), x.argmin(1), x.max(1).indices, x.min(0).indices

    check(f, x)


def test_int64():
    x = randint(-1000, 1000, 64, 50, seed=4)

    def f(x):
        return x.sum(), x.sum(1), x.max(), x.min(0).values, x.argmax(1), x.cumsum(0), (x > 0).sum()

    check(f, x)


def test_all_any_count():
    x = randn(64, 50, seed=5)

    def f(x):
        return (x > 0).all(), (x > 3).any(1), torch.count_nonzero(x > 0.5, 0), (x > -5).all()

    check(f, x)
