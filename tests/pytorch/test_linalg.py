"""torch.linalg on the device (cuSOLVER and cuBLAS's batched LAPACK-like calls,
remoted; LAPACK on rgpu's CPU device), single and batched, float32 and
float64, against PyTorch's CPU device. Where a factorization is not unique
(QR, SVD, eigenvectors) its reconstruction and orthogonality are checked
instead of its factors."""

import pytest
import torch

from conftest import DEV, randn, synchronize

DTYPES = [torch.float32, torch.float64]
# Single matrices reach cuSOLVER's one-matrix calls; batches of small ones
# reach cuBLAS's batched LU/QR and cuSOLVER's batched Cholesky and Jacobi
# methods (PyTorch's own heuristics choose).
SHAPES = [(), (3,), (2, 3)]
SIZES = [1, 5, 33]

# (rtol, atol): results of well-conditioned problems (condition numbers of a
# few tens), computed by different LAPACK-like algorithms on each side.
TOL = {torch.float32: (2e-4, 2e-4), torch.float64: (1e-9, 1e-9)}


def close(actual, expected, dtype, msg="", scale=1.0):
    rtol, atol = TOL[dtype]
    assert actual.device.type == DEV.type, f"{msg}: result on {actual.device}"
    torch.testing.assert_close(actual.cpu(), expected.cpu(), rtol=rtol * scale, atol=atol * scale,
                               msg=lambda m: f"{msg} ({dtype}): {m}")


def general(batch, n, dtype, seed=0):
    """A well-conditioned general matrix: random plus n on the diagonal."""
    a = randn(*batch, n, n, dtype=torch.float64, seed=seed)
    return (a + n * torch.eye(n, dtype=torch.float64)).to(dtype)


def spd(batch, n, dtype, seed=0):
    """A symmetric positive definite matrix, well conditioned."""
    a = randn(*batch, n, n, dtype=torch.float64, seed=seed)
    return (a @ a.mT / n + torch.eye(n, dtype=torch.float64)).to(dtype)


def symmetric(batch, n, dtype, seed=0):
    a = randn(*batch, n, n, dtype=torch.float64, seed=seed)
    return ((a + a.mT) / 2).to(dtype)


def ids(v):
    return "x".join(map(str, v)) if isinstance(v, tuple) else str(v)


def eye_like(a):
    return torch.eye(a.shape[-1], dtype=a.dtype, device=a.device).expand_as(a)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("batch", SHAPES, ids=ids)
def test_solve_inv_det(batch, n, dtype):
    a = general(batch, n, dtype, seed=1)
    b = randn(*batch, n, 2, dtype=dtype, seed=2)
    x = torch.linalg.solve(a.to(DEV), b.to(DEV))
    close(x, torch.linalg.solve(a, b), dtype, "solve")
    close(torch.linalg.inv(a.to(DEV)), torch.linalg.inv(a), dtype, "inv")
    det = torch.linalg.det(a.to(DEV))
    close(det, torch.linalg.det(a), dtype, "det", scale=10)
    lu, piv = torch.linalg.lu_factor(a.to(DEV))
    close(torch.linalg.lu_solve(lu, piv, b.to(DEV)), torch.linalg.solve(a, b), dtype, "lu_solve")
    synchronize()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("batch", SHAPES, ids=ids)
def test_cholesky(batch, n, dtype):
    a = spd(batch, n, dtype, seed=3)
    l = torch.linalg.cholesky(a.to(DEV))
    close(l, torch.linalg.cholesky(a), dtype, "cholesky")
    u = torch.linalg.cholesky(a.to(DEV), upper=True)
    close(u, torch.linalg.cholesky(a, upper=True), dtype, "cholesky upper")
    b = randn(*batch, n, 1, dtype=dtype, seed=4)
    close(torch.cholesky_solve(b.to(DEV), l), torch.cholesky_solve(b, torch.linalg.cholesky(a)), dtype,
          "cholesky_solve")
    # Not positive definite: info reports the failing minor.
    bad = a.clone()
    bad[..., 0, 0] = -1
    _, info = torch.linalg.cholesky_ex(bad.to(DEV))
    assert bool((info.cpu() == 1).all()), info


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("mn", [(5, 5), (9, 4), (4, 9), (40, 17)], ids=ids)
@pytest.mark.parametrize("batch", SHAPES, ids=ids)
def test_qr(batch, mn, dtype):
    m, n = mn
    a = randn(*batch, m, n, dtype=dtype, seed=5)
    for mode in ("reduced", "complete"):
        q, r = torch.linalg.qr(a.to(DEV), mode=mode)
        close(q @ r, a, dtype, f"qr {mode}: Q R", scale=5)
        close(q.mT @ q, eye_like(q.mT @ q).cpu(), dtype, f"qr {mode}: Q^T Q", scale=5)
        assert torch.equal(r.cpu(), r.cpu().triu()), "R is not upper triangular"
        # Both sides use Householder reflections with LAPACK's conventions.
        close(r.abs(), torch.linalg.qr(a, mode=mode)[1].abs(), dtype, f"qr {mode}: |R|", scale=5)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("mn", [(5, 5), (9, 4), (4, 9), (40, 17)], ids=ids)
@pytest.mark.parametrize("batch", SHAPES, ids=ids)
def test_svd(batch, mn, dtype):
    m, n = mn
    a = randn(*batch, m, n, dtype=dtype, seed=6)
    expected_s = torch.linalg.svdvals(a)
    for full in (False, True):
        u, s, vh = torch.linalg.svd(a.to(DEV), full_matrices=full)
        k = min(m, n)
        close(s, expected_s, dtype, "svd: S", scale=5)
        close(u[..., :k] * s.unsqueeze(-2) @ vh[..., :k, :], a, dtype, f"svd full={full}: U S Vh", scale=10)
        close(u.mT @ u, eye_like(u.mT @ u).cpu(), dtype, f"svd full={full}: U^T U", scale=10)
        close(vh @ vh.mT, eye_like(vh @ vh.mT).cpu(), dtype, f"svd full={full}: Vh Vh^T", scale=10)
    close(torch.linalg.svdvals(a.to(DEV)), expected_s, dtype, "svdvals", scale=5)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [1, 6, 33])
@pytest.mark.parametrize("batch", SHAPES, ids=ids)
def test_eigh(batch, n, dtype):
    a = symmetric(batch, n, dtype, seed=7)
    for uplo in ("L", "U"):
        w, v = torch.linalg.eigh(a.to(DEV), UPLO=uplo)
        close(w, torch.linalg.eigvalsh(a, UPLO=uplo), dtype, f"eigh {uplo}: eigenvalues", scale=10)
        close(v * w.unsqueeze(-2) @ v.mT, a, dtype, f"eigh {uplo}: V diag(w) V^T", scale=10)
        close(v.mT @ v, eye_like(v).cpu(), dtype, f"eigh {uplo}: V^T V", scale=10)
    close(torch.linalg.eigvalsh(a.to(DEV)), torch.linalg.eigvalsh(a), dtype, "eigvalsh", scale=10)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("batch", SHAPES, ids=ids)
def test_lstsq(batch, dtype):
    # Tall, full rank: the unique least-squares solution (CUDA's driver is gels).
    a = randn(*batch, 12, 5, dtype=dtype, seed=8)
    b = randn(*batch, 12, 3, dtype=dtype, seed=9)
    x = torch.linalg.lstsq(a.to(DEV), b.to(DEV)).solution
    close(x, torch.linalg.lstsq(a, b).solution, dtype, "lstsq", scale=10)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("batch", [(), (3,)], ids=ids)
def test_triangular_and_ldl(batch, dtype):
    a = general(batch, 7, dtype, seed=10)
    b = randn(*batch, 7, 4, dtype=dtype, seed=11)
    for upper in (False, True):
        t = a.triu() if upper else a.tril()
        close(torch.linalg.solve_triangular(t.to(DEV), b.to(DEV), upper=upper),
              torch.linalg.solve_triangular(t, b, upper=upper), dtype, f"solve_triangular upper={upper}")
    s = spd(batch, 7, dtype, seed=12)
    ld, piv = torch.linalg.ldl_factor(s.to(DEV))
    close(torch.linalg.ldl_solve(ld, piv, b.to(DEV)), torch.linalg.solve(s, b), dtype, "ldl_solve", scale=10)
    assert piv.device.type == DEV.type and ld.device.type == DEV.type
