"""torch.sparse matmul (cuSPARSE's SpMM and SpMV, remoted): CSR and COO
operands, sparse @ dense, sparse @ vector, addmm with a sparse operand,
to_sparse_csr, float32 and float64, the gradient of the dense operand
through a sparse product (a transposed SpMM), and sampled_addmm (SDDMM)."""

import pytest
import torch

from conftest import DEV, check, randn, synchronize, assert_close

DTYPES = [torch.float32, torch.float64]


def sparse_pattern(m, n, dtype, seed, density=0.3):
    """A dense CPU matrix with about `density` of its entries non-zero, the
    same on both devices."""
    g = torch.Generator().manual_seed(seed)
    keep = torch.rand((m, n), generator=g) < density
    return randn(m, n, dtype=dtype, seed=seed + 100) * keep


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("shape", [(7, 5, 3), (33, 47, 29), (64, 128, 1)], ids=lambda s: "x".join(map(str, s)))
def test_sparse_mm(shape, layout, dtype):
    m, k, n = shape
    a, b = sparse_pattern(m, k, dtype, seed=1), randn(k, n, dtype=dtype, seed=2)

    def f(a, b):
        s = a.to_sparse() if layout == "coo" else a.to_sparse_csr()
        return torch.sparse.mm(s, b), s @ b

    check(f, a, b, kind="matmul")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_matrix_vector(layout, dtype):
    a, x = sparse_pattern(40, 25, dtype, seed=3), randn(25, dtype=dtype, seed=4)

    def f(a, x):
        s = a.to_sparse() if layout == "coo" else a.to_sparse_csr()
        return s @ x, torch.mv(s, x)

    check(f, a, x, kind="matmul")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_addmm_with_a_sparse_operand(layout, dtype):
    a, b, c = sparse_pattern(20, 30, dtype, seed=5), randn(30, 12, dtype=dtype, seed=6), randn(20, 12, dtype=dtype, seed=7)

    def f(a, b, c):
        s = a.to_sparse() if layout == "coo" else a.to_sparse_csr()
        return torch.addmm(c, s, b), torch.addmm(c, s, b, beta=0.5, alpha=-2.0), torch.sparse.addmm(c, s, b)

    check(f, a, b, c, kind="matmul")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_csr_with_empty_rows_and_a_transposed_dense_operand(dtype):
    a = sparse_pattern(16, 24, dtype, seed=8)
    a[3] = 0
    a[10:13] = 0
    b = randn(10, 24, dtype=dtype, seed=9)

    def f(a, b):
        s = a.to_sparse_csr()
        return s @ b.t(), s @ b.t().contiguous()

    check(f, a, b, kind="matmul")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_gradient_of_the_dense_operand(layout, dtype):
    a, b = sparse_pattern(18, 14, dtype, seed=10), randn(14, 6, dtype=dtype, seed=11)
    g = randn(18, 6, dtype=dtype, seed=12)

    def f(a, b, g):
        s = a.to_sparse() if layout == "coo" else a.to_sparse_csr()
        b = b.clone().requires_grad_(True)
        out = torch.sparse.mm(s, b)
        out.backward(g)
        return out.detach(), b.grad

    check(f, a, b, g, kind="matmul")


def test_results_stay_on_the_device():
    a, b = sparse_pattern(9, 9, torch.float32, seed=13).to(DEV), randn(9, 4, seed=14).to(DEV)
    out = a.to_sparse_csr() @ b
    synchronize()
    assert out.device.type == DEV.type
    assert_close(out, a.cpu() @ b.cpu(), "matmul", "dense reference")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_sampled_addmm(dtype):
    """torch.sparse.sampled_addmm: a dense product sampled at a CSR pattern
    (cuSPARSE's SDDMM)."""
    c = sparse_pattern(12, 9, dtype, seed=15)
    a, b = randn(12, 5, dtype=dtype, seed=16), randn(5, 9, dtype=dtype, seed=17)

    def f(c, a, b):
        s = c.to_sparse_csr()
        return (torch.sparse.sampled_addmm(s, a, b).to_dense(),
                torch.sparse.sampled_addmm(s, a, b, beta=0.5, alpha=-1.5).to_dense())

    check(f, c, a, b, kind="matmul")
