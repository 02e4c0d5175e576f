"""Elementwise ops in float32, float16, bfloat16 and int64."""

import pytest
import torch
import torch.nn.functional as F

from conftest import DEV, FLOATS, assert_close, check, randint, randn, skip_bf16_if_unsupported

N = 2000

UNARY = {
    "neg": torch.neg,
    "abs": torch.abs,
    "exp": torch.exp,
    "log": lambda x: torch.log(x.abs() + 0.5),
    "sqrt": lambda x: torch.sqrt(x.abs()),
    "rsqrt": lambda x: torch.rsqrt(x.abs() + 0.1),
    "sin": torch.sin,
    "cos": torch.cos,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "relu": torch.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "erf": torch.erf,
    "reciprocal": lambda x: torch.reciprocal(x.abs() + 0.25),
    "floor": lambda x: torch.floor(x * 4),
    "round": lambda x: torch.round(x * 4),
    "sign": torch.sign,
    "square": torch.square,
    "clamp": lambda x: torch.clamp(x, -0.5, 0.75),
    "pow_scalar": lambda x: torch.pow(x.abs(), 1.5),
    "mul_scalar": lambda x: x * 0.3 + 2,
    "isnan_where": lambda x: torch.where(torch.isfinite(x), x, torch.zeros_like(x)),
}

BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": lambda x, y: x / (y.abs() + 0.5),
    "add_alpha": lambda x, y: torch.add(x, y, alpha=0.5),
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "pow": lambda x, y: torch.pow(x.abs() + 0.1, y),
    "atan2": torch.atan2,
    "lerp": lambda x, y: torch.lerp(x, y, 0.3),
    "gt": torch.gt,
    # x where y > 0, y elsewhere: equal in about half the places.
    "eq": lambda x, y: x == torch.where(y > 0, x, y),
    "ne": lambda x, y: x != torch.where(y > 0, x, y),
    "broadcast_row": lambda x, y: x.view(40, 50) + y.view(40, 50)[0],
    "broadcast_col": lambda x, y: x.view(40, 50) * y.view(40, 50)[:, :1],
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, dtype):
    skip_bf16_if_unsupported(dtype)
    check(UNARY[name], randn(N, dtype=dtype, seed=1), msg=name)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name, dtype):
    skip_bf16_if_unsupported(dtype)
    check(BINARY[name], randn(N, dtype=dtype, seed=1), randn(N, dtype=dtype, seed=2), msg=name)


@pytest.mark.parametrize("name", ["gt", "eq", "ne"])
def test_comparisons_are_not_constant(name):
    # The comparisons above can fail: on these inputs each is true in some
    # places and false in others (checked on the CPU's result), so a device
    # answering all-true or all-false differs from it.
    x, y = randn(N, seed=1), randn(N, seed=2)
    actual, expected = check(BINARY[name], x, y, msg=name)
    n_true = int(expected.sum())
    assert N // 4 < n_true < 3 * N // 4, (name, n_true)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_in_place_and_non_contiguous(dtype):
    skip_bf16_if_unsupported(dtype)

    def f(x, y):
        x = x.clone()
        x.mul_(2).add_(y)
        t = x.t()  # non-contiguous operand and output
        return t * 3 - y.t(), torch.sigmoid(t[::2, 1::3])

    check(f, randn(48, 64, dtype=dtype, seed=3), randn(48, 64, dtype=dtype, seed=4))


INT_BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "floor_divide": lambda x, y: torch.floor_divide(x, y.abs() + 1),
    "remainder": lambda x, y: torch.remainder(x, y.abs() + 1),
    "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor,
    "shift_left": lambda x, y: x.abs() << (y.abs() % 8),
    "shift_right": lambda x, y: x >> (y.abs() % 8),
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "lt": torch.lt,
    "ne": torch.ne,
    "large": lambda x, y: x * (1 << 40) + y,  # 64-bit arithmetic, not 32
}


@pytest.mark.parametrize("name", sorted(INT_BINARY))
def test_int64_binary(name):
    x = randint(-1000, 1000, N, seed=5)
    y = randint(-1000, 1000, N, seed=6)
    check(INT_BINARY[name], x, y, msg=name)


def test_int64_unary_and_casts():
    x = randint(-(1 << 40), 1 << 40, N, seed=7)

    def f(x):
        return torch.abs(x), -x, x.to(torch.float32), (x % 97).to(torch.int32), x.clamp(-5, 5), x.sign()

    check(f, x)


def test_type_promotion():
    def f(i, x, h):
        return i + x, i * 0.5, h + x, h * 2, (x > 0).to(torch.int64) + i

    check(f, randint(-10, 10, N, seed=8), randn(N, seed=9), randn(N, dtype=torch.float16, seed=10))


def test_float64():
    def f(x, y):
        return torch.exp(x) * y + torch.sin(y), torch.sqrt(x.abs()) / (y.abs() + 1)

    check(f, randn(N, dtype=torch.float64, seed=11), randn(N, dtype=torch.float64, seed=12))


def test_fill_and_zero():
    d = randn(1000).to(DEV)
    d.zero_()
    assert_close(d, torch.zeros(1000))
    d.fill_(2.0)
    assert_close(d, torch.full((1000,), 2.0))
