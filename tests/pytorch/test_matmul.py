"""matmul, bmm, addmm, baddbmm, linear in float32, float16, bfloat16 (and float64)."""

import copy

import pytest
import torch
import torch.nn.functional as F

from conftest import DEV, assert_close, check, move, randn, skip_bf16_if_unsupported, synchronize

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]

# (m, k, n): small, odd, and a few hundred deep.
SHAPES = [(8, 8, 8), (33, 47, 29), (64, 256, 32), (1, 100, 70)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul(shape, dtype):
    skip_bf16_if_unsupported(dtype)
    m, k, n = shape
    a, b = randn(m, k, dtype=dtype, seed=1), randn(k, n, dtype=dtype, seed=2)

    def f(a, b):
        # Every combination of transposes reaches the BLAS with its own op flags.
        return (a @ b, torch.matmul(a.t().contiguous().t(), b), torch.mm(a, b.t().contiguous().t()),
                (b.t() @ a.t()), torch.matmul(a[0], b), torch.matmul(a, b[:, 0]))

    check_against_float32(f, a, b)


def check_against_float32(f, *args):
    """f on the device against f on the CPU. For float16 and bfloat16 the CPU
    computes in float32 and rounds once: what a GPU's BLAS does (float32
    accumulation), where PyTorch's own CPU kernels for these types may round
    partial sums (a matrix-vector product 256 deep then differs by several
    bfloat16 ulps from either)."""
    dtype = args[0].dtype
    if dtype not in (torch.float16, torch.bfloat16):
        check(f, *args, kind="matmul")
        return
    expected = tuple(t.to(dtype) for t in f(*(x.float() for x in args)))
    actual = f(*move(args, DEV))
    synchronize()
    assert_close(actual, expected, "matmul", "matmul against float32")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_bmm_and_baddbmm(dtype):
    skip_bf16_if_unsupported(dtype)
    a, b = randn(4, 16, 32, dtype=dtype, seed=3), randn(4, 32, 24, dtype=dtype, seed=4)
    c = randn(4, 16, 24, dtype=dtype, seed=5)

    def f(a, b, c):
        return (torch.bmm(a, b), a @ b, torch.bmm(a, b.transpose(1, 2).contiguous().transpose(1, 2)),
                torch.baddbmm(c, a, b), torch.baddbmm(c, a, b, beta=0.5, alpha=-2.0),
                torch.matmul(a[:, None], b[None]).flatten(0, 1))

    check(f, a, b, c, kind="matmul")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_addmm(dtype):
    skip_bf16_if_unsupported(dtype)
    a, b = randn(40, 64, dtype=dtype, seed=6), randn(64, 24, dtype=dtype, seed=7)
    c, bias = randn(40, 24, dtype=dtype, seed=8), randn(24, dtype=dtype, seed=9)

    def f(a, b, c, bias):
        return (torch.addmm(c, a, b), torch.addmm(bias, a, b), torch.addmm(c, a, b, beta=0.25, alpha=1.5),
                torch.addmm(c, a, b, beta=0.0), torch.addmv(bias, a.t()[:24], b[:40, 0]))

    check(f, a, b, c, bias, kind="matmul")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_linear(dtype):
    skip_bf16_if_unsupported(dtype)
    x = randn(64, 32, dtype=dtype, seed=10)
    w, b = randn(48, 32, dtype=dtype, seed=11, scale=0.2), randn(48, dtype=dtype, seed=12)
    x3 = randn(2, 8, 32, dtype=dtype, seed=13)

    def f(x, w, b, x3):
        # linear with a bias and a ReLU or GELU after it (the Lt epilogues), a 3-D input, no bias.
        return (F.linear(x, w, b), F.linear(x, w), F.relu(F.linear(x, w, b)), F.gelu(F.linear(x, w, b)),
                F.linear(x3, w, b))

    check(f, x, w, b, x3, kind="matmul")


def test_linear_module():
    torch.manual_seed(14)
    layer = torch.nn.Linear(32, 16)
    x = randn(20, 32, seed=15)

    check(lambda x: copy.deepcopy(layer).to(x.device)(x), x, kind="matmul")


def test_einsum_and_outer():
    a, b = randn(8, 16, seed=16), randn(16, 12, seed=17)
    v, w = randn(30, seed=18), randn(20, seed=19)

    def f(a, b, v, w):
        return torch.einsum("ik,kj->ij", a, b), torch.outer(v, w), torch.dot(v, v), torch.mv(a, b[:, 0])

    check(f, a, b, v, w, kind="matmul")
