"""Creation on the device, and copies both ways, pinned and pageable, blocking or not."""

import pytest
import torch

from conftest import CPU, DEV, SELF_CHECK, assert_close, check, randint, randn, synchronize

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32,
          torch.uint8, torch.bool]


def sample(dtype, n, seed=0):
    if dtype == torch.bool:
        return randint(0, 2, n, seed=seed).bool()
    if dtype.is_floating_point:
        return randn(n, dtype=dtype, seed=seed)
    return randint(0, 100, n, seed=seed).to(dtype)


def test_creation():
    for make in [
        lambda d: torch.zeros(37, 5, device=d),
        lambda d: torch.ones(300, dtype=torch.float16, device=d),
        lambda d: torch.full((12, 12), 2.5, dtype=torch.bfloat16, device=d),
        lambda d: torch.full((100,), 7, dtype=torch.int64, device=d),
        lambda d: torch.arange(1000, device=d),
        lambda d: torch.arange(0.0, 10.0, 0.25, device=d),
        lambda d: torch.linspace(-3, 3, 257, device=d),
        lambda d: torch.eye(33, device=d),
        lambda d: torch.empty(500, device=d).fill_(-1.5),
        lambda d: torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=d),
        lambda d: torch.zeros_like(torch.empty(64, device=d)) + 1,
    ]:
        check(make, CPU)


@pytest.mark.parametrize("pinned", [False, True], ids=["pageable", "pinned"])
@pytest.mark.parametrize("non_blocking", [False, True], ids=["blocking", "non_blocking"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_round_trip(dtype, pinned, non_blocking):
    if pinned and SELF_CHECK:
        pytest.skip("self-check (--self-check): pinned memory needs the CUDA device")
    host = sample(dtype, 3000)
    if pinned:
        host = host.pin_memory()
        assert host.is_pinned()
    dev = host.to(DEV, non_blocking=non_blocking)
    back = torch.empty(host.shape, dtype=dtype, pin_memory=pinned)
    back.copy_(dev, non_blocking=non_blocking)
    synchronize()
    assert dev.device.type == DEV.type
    assert torch.equal(back, host)


@pytest.mark.parametrize("pinned", [False, True], ids=["pageable", "pinned"])
def test_large_copies(pinned):
    if pinned and SELF_CHECK:
        pytest.skip("self-check (--self-check): pinned memory needs the CUDA device")
    host = randn(1 << 20, seed=3)  # 4 MiB: large enough to be sent in pieces
    if pinned:
        host = host.pin_memory()
    dev = host.to(DEV, non_blocking=True)
    back = dev.to(CPU, non_blocking=False)
    assert torch.equal(back, host)


def test_device_to_device_copies():
    a = randn(40, 75, seed=4)
    d = a.to(DEV)
    assert_close(d.clone(), a)
    e = torch.empty_like(d)
    e.copy_(d)
    assert_close(e, a)
    # Strided sources and destinations, and conversions, on the device.
    assert_close(d.t().contiguous(), a.t().contiguous())
    assert_close(d[::3, 1::2].contiguous(), a[::3, 1::2].contiguous())
    f = torch.zeros(75, 40, device=DEV)
    f.copy_(d.t())
    assert_close(f, a.t().contiguous())
    for dtype in [torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.bool]:
        assert_close(d.to(dtype), a.to(dtype), msg=f"to {dtype}")


def test_partial_copies_into_views():
    a = randn(1000, seed=5)
    d = torch.zeros(2000, device=DEV)
    d[500:1500].copy_(a.to(DEV))
    expected = torch.zeros(2000)
    expected[500:1500] = a
    assert_close(d, expected)
    host = torch.zeros(300)
    host[100:200].copy_(d[500:600])
    expected_host = torch.zeros(300)
    expected_host[100:200] = a[:100]
    assert torch.equal(host, expected_host)


def test_scalars_and_item():
    d = torch.tensor(3.25, device=DEV)
    assert d.item() == 3.25
    assert (d * 2).item() == 6.5
    assert torch.arange(10, device=DEV).sum().item() == 45
    assert torch.tensor([True, False], device=DEV).any().item() is True
    assert torch.tensor([1.5, 2.5], device=DEV).tolist() == [1.5, 2.5]
