"""torch.fft through rgpu's remoted cuFFT (FFTW behind rgpud's CPU device):
fft, ifft, rfft, irfft, hfft, fft2, ifft2, rfft2, irfft2, fftn, rfftn, batched
and strided inputs, power-of-two and other lengths, float32 and float64,
every norm mode, against PyTorch's CPU device."""

import pytest
import torch

from conftest import DEV, CPU, randn

REAL = [torch.float32, torch.float64]
NORMS = [None, "forward", "ortho", "backward"]
# Powers of two, odd, prime and composite lengths.
LENGTHS = [1, 8, 12, 17, 64, 100, 243]


def fft_tolerance(dtype):
    """Error allowed relative to the largest magnitude of the result: an FFT
    of length n sums n terms in log2(n) stages of rounding, in another order
    on each side."""
    return 1e-12 if dtype in (torch.float64, torch.complex128) else 2e-5


def assert_fft_close(actual, expected, msg=""):
    assert isinstance(actual, torch.Tensor), msg
    assert actual.device.type == DEV.type, f"{msg}: result on {actual.device}, not {DEV}"
    assert actual.dtype == expected.dtype, f"{msg}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{msg}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    if expected.numel() == 0:
        return
    got = actual.cpu()
    scale = expected.abs().max().item() + 1.0
    err = (got - expected).abs().max().item()
    assert err <= fft_tolerance(expected.dtype) * scale, f"{msg}: max error {err} for magnitude {scale}"


def both(fn, x, **kw):
    return fn(x.to(DEV), **kw), fn(x, **kw)


def crandn(*shape, dtype=torch.float32, seed=0):
    real = randn(*shape, dtype=dtype, seed=seed)
    imag = randn(*shape, dtype=dtype, seed=seed + 1000)
    return torch.complex(real, imag)


@pytest.mark.parametrize("dtype", REAL, ids=str)
@pytest.mark.parametrize("n", LENGTHS)
def test_fft_ifft_1d(n, dtype):
    x = crandn(3, n, dtype=dtype, seed=n)
    for fn in (torch.fft.fft, torch.fft.ifft):
        got, want = both(fn, x)
        assert_fft_close(got, want, f"{fn.__name__} n={n}")


@pytest.mark.parametrize("dtype", REAL, ids=str)
@pytest.mark.parametrize("n", LENGTHS)
def test_rfft_irfft_1d(n, dtype):
    x = randn(4, n, dtype=dtype, seed=n)
    got, want = both(torch.fft.rfft, x)
    assert_fft_close(got, want, f"rfft n={n}")
    assert got.shape[-1] == n // 2 + 1
    spectrum = torch.fft.rfft(x)
    got, want = both(torch.fft.irfft, spectrum, n=n)
    assert_fft_close(got, want, f"irfft n={n}")
    # The round trip gives the signal back.
    assert_fft_close(torch.fft.irfft(torch.fft.rfft(x.to(DEV)), n=n), x, f"rfft-irfft n={n}")


@pytest.mark.parametrize("norm", NORMS, ids=str)
@pytest.mark.parametrize("dtype", REAL, ids=str)
def test_norm_modes(norm, dtype):
    x = crandn(2, 30, dtype=dtype, seed=7)
    r = randn(2, 30, dtype=dtype, seed=8)
    for fn, arg in ((torch.fft.fft, x), (torch.fft.ifft, x), (torch.fft.rfft, r), (torch.fft.hfft, x),
                    (torch.fft.ihfft, r)):
        got, want = both(fn, arg, norm=norm)
        assert_fft_close(got, want, f"{fn.__name__} norm={norm}")
    got, want = both(torch.fft.irfft, torch.fft.rfft(r), n=30, norm=norm)
    assert_fft_close(got, want, f"irfft norm={norm}")


@pytest.mark.parametrize("dtype", REAL, ids=str)
@pytest.mark.parametrize("shape", [(8, 8), (5, 12), (16, 9), (3, 7, 10)], ids=lambda s: "x".join(map(str, s)))
def test_fft2_and_fftn(shape, dtype):
    x = crandn(*shape, dtype=dtype, seed=sum(shape))
    r = randn(*shape, dtype=dtype, seed=sum(shape) + 1)
    for fn, arg in ((torch.fft.fft2, x), (torch.fft.ifft2, x), (torch.fft.fftn, x), (torch.fft.ifftn, x),
                    (torch.fft.rfft2, r), (torch.fft.rfftn, r)):
        got, want = both(fn, arg)
        assert_fft_close(got, want, f"{fn.__name__} {shape}")
    spectrum = torch.fft.rfft2(r)
    got, want = both(torch.fft.irfft2, spectrum, s=shape[-2:])
    assert_fft_close(got, want, f"irfft2 {shape}")


@pytest.mark.parametrize("dtype", REAL, ids=str)
def test_fftn_three_dims_and_axes(dtype):
    x = crandn(2, 6, 10, 12, dtype=dtype, seed=3)
    got, want = both(torch.fft.fftn, x, dim=(1, 2, 3))
    assert_fft_close(got, want, "fftn over three dims of a batch")
    got, want = both(torch.fft.fftn, x, dim=(0, 2))
    assert_fft_close(got, want, "fftn over non-adjacent dims")
    got, want = both(torch.fft.fft, x, dim=1)
    assert_fft_close(got, want, "fft over a middle dim")


@pytest.mark.parametrize("dtype", REAL, ids=str)
def test_batched_and_strided(dtype):
    # A large batch, a transposed (strided) view, a slice with a step, and
    # padding/cropping through n=.
    x = crandn(64, 40, dtype=dtype, seed=11)
    got, want = both(torch.fft.fft, x)
    assert_fft_close(got, want, "batch of 64")
    got, want = both(lambda t: torch.fft.fft(t.t(), dim=0), x)
    assert_fft_close(got, want, "transposed view")
    got, want = both(lambda t: torch.fft.fft(t[::2, 1::3]), x)
    assert_fft_close(got, want, "stepped slice")
    got, want = both(torch.fft.fft, x, n=50)
    assert_fft_close(got, want, "zero-padded to 50")
    got, want = both(torch.fft.fft, x, n=16)
    assert_fft_close(got, want, "cropped to 16")
    r = randn(5, 3, 48, dtype=dtype, seed=12)
    got, want = both(lambda t: torch.fft.rfft(t.transpose(0, 2), dim=0), r)
    assert_fft_close(got, want, "rfft of a strided view")


def test_fft_result_feeds_more_work():
    # The transform's output is ordinary device memory: used by kernels
    # afterwards, and its gradient flows back through another transform.
    x = randn(4, 32, seed=21).to(DEV).requires_grad_()
    y = torch.fft.rfft(x).abs().sum()
    y.backward()
    xc = x.detach().cpu().requires_grad_()
    torch.fft.rfft(xc).abs().sum().backward()
    assert_fft_close(x.grad, xc.grad, "gradient of |rfft|")
    z = torch.fft.fftshift(torch.fft.fft(x.detach().to(torch.complex64)))
    assert_fft_close(z, torch.fft.fftshift(torch.fft.fft(x.detach().cpu().to(torch.complex64))), "fftshift")


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.skipif(DEV.type != "cuda", reason="half-precision FFTs exist only on CUDA devices")
def test_half_precision_power_of_two():
    # cuFFT's 16-bit plans (CUDA_R_16F/CUDA_C_16F): PyTorch allows them for
    # powers of two; the CPU has none, so the reference is float32's,
    # compared within half precision's rounding of inputs and outputs.
    x = randn(4, 32, seed=31).to(torch.float16)
    got = torch.fft.rfft(x.to(DEV))
    assert got.dtype == torch.complex32
    want = torch.fft.rfft(x.float())
    err = (got.to(torch.complex64).cpu() - want).abs().max().item()
    assert err <= 4e-3 * (want.abs().max().item() + 1.0), f"rfft in half: max error {err}"
    c = torch.complex(randn(2, 16, seed=32), randn(2, 16, seed=33)).to(torch.complex32)
    got = torch.fft.ifft(c.to(DEV))
    want = torch.fft.ifft(c.to(torch.complex64))
    err = (got.to(torch.complex64).cpu() - want).abs().max().item()
    assert err <= 4e-3 * (want.abs().max().item() + 1.0), f"ifft in half: max error {err}"
