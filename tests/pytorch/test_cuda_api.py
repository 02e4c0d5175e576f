"""The torch.cuda API: devices, memory, synchronization, streams, events, seeds."""

import os
import subprocess
import sys
import time

import pytest
import torch

from conftest import DEV, assert_close, randn, requires_cuda, synchronize


@requires_cuda
def test_is_available_and_device_count():
    assert torch.cuda.is_available()
    assert torch.cuda.device_count() >= 1
    assert torch.cuda.current_device() == 0


@requires_cuda
def test_nvml_based_device_count_agrees():
    # PyTorch counts devices through NVML with this set: NVML must agree with the runtime.
    code = "import torch; print(torch.cuda.device_count())"
    env = dict(os.environ, PYTORCH_NVML_BASED_CUDA_CHECK="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) == torch.cuda.device_count()
    # NVML itself answered (PyTorch falls back to the runtime when it fails: -1).
    assert torch.cuda._device_count_nvml() == torch.cuda.device_count()


@requires_cuda
def test_nvml_identifies_the_runtimes_devices():
    uuids = torch.cuda._raw_device_uuid_nvml()
    assert uuids is not None and len(uuids) == torch.cuda.device_count()
    for i, uuid in enumerate(uuids):
        assert uuid == "GPU-" + str(torch.cuda.get_device_properties(i).uuid)


@requires_cuda
def test_pynvml_agrees_with_the_runtime():
    pynvml = pytest.importorskip("pynvml")
    pynvml.nvmlInit()
    try:
        assert pynvml.nvmlDeviceGetCount() == torch.cuda.device_count()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        assert pynvml.nvmlDeviceGetName(handle) == torch.cuda.get_device_name(0)
        props = torch.cuda.get_device_properties(0)
        assert pynvml.nvmlDeviceGetCudaComputeCapability(handle) == (props.major, props.minor)
        free, total = torch.cuda.mem_get_info()
        before = pynvml.nvmlDeviceGetMemoryInfo(handle)
        assert before.total == total
        # 64 MiB more than the caching allocator holds: the device gives what
        # the allocator reserves for it (all 64 MiB from cudaMalloc; with
        # expandable segments, the chunks mapped beyond those already mapped).
        reserved = torch.cuda.memory_reserved()
        block = torch.cuda.caching_allocator_alloc(64 << 20)
        try:
            after = pynvml.nvmlDeviceGetMemoryInfo(handle)
            grown = torch.cuda.memory_reserved() - reserved
            assert grown >= (32 << 20)
            assert after.used >= before.used + grown
            assert after.free + after.used == after.total
        finally:
            torch.cuda.caching_allocator_delete(block)
            torch.cuda.empty_cache()
        # Utilization comes from the server's device, through pynvml too.
        rates = pynvml.nvmlDeviceGetUtilizationRates(handle)
        assert 0 <= rates.gpu <= 100 and 0 <= rates.memory <= 100
        assert 0 <= torch.cuda.utilization() <= 100
        assert 0 <= torch.cuda.memory_usage() <= 100
    finally:
        pynvml.nvmlShutdown()


@requires_cuda
def test_name_and_properties():
    name = torch.cuda.get_device_name(0)
    props = torch.cuda.get_device_properties(0)
    assert isinstance(name, str) and name
    assert props.name == name
    assert props.total_memory > 0
    assert props.multi_processor_count > 0
    assert (props.major, props.minor) == torch.cuda.get_device_capability(0)
    assert props.major >= 1


@requires_cuda
def test_mem_get_info_and_memory_allocated():
    torch.cuda.empty_cache()  # so that the block below is new device memory, not a cached one
    free0, total = torch.cuda.mem_get_info()
    assert 0 < free0 <= total
    assert total == torch.cuda.get_device_properties(0).total_memory
    base = torch.cuda.memory_allocated()
    x = torch.empty(8 << 20, dtype=torch.float32, device=DEV)  # 32 MiB
    assert torch.cuda.memory_allocated() >= base + x.numel() * 4
    assert torch.cuda.memory_reserved() >= torch.cuda.memory_allocated()
    free1, total1 = torch.cuda.mem_get_info()
    assert total1 == total
    assert free1 < free0  # the caching allocator's block is taken from the device
    del x
    assert torch.cuda.memory_allocated() == base
    torch.cuda.empty_cache()


@requires_cuda
def test_synchronize_makes_results_visible():
    x = randn(2048).to(DEV)
    y = x * 3 + 1
    torch.cuda.synchronize()
    torch.cuda.synchronize(0)
    assert_close(y, x.cpu() * 3 + 1)


@requires_cuda
def test_streams():
    a = randn(1000, seed=1)
    s = torch.cuda.Stream()
    assert s != torch.cuda.default_stream()
    x = a.to(DEV)
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        assert torch.cuda.current_stream() == s
        y = x * 2
        z = y.sum()
    torch.cuda.current_stream().wait_stream(s)
    s.synchronize()
    assert s.query()
    assert_close(y, a * 2)
    assert_close(z, (a * 2).sum(), "reduction")


@requires_cuda
def test_stream_priorities():
    low = torch.cuda.Stream(priority=0)
    high = torch.cuda.Stream(priority=-1)
    assert high.priority <= low.priority
    x = randn(500).to(DEV)
    with torch.cuda.stream(high):
        y = x + 1
    high.synchronize()
    assert_close(y, x.cpu() + 1)


def _work(x, n):
    """n dependent matmuls and a reduction: device work that takes time."""
    for _ in range(n):
        x = torch.tanh(x @ x)
    return x.sum()


@requires_cuda
def test_events_and_elapsed_time():
    # Three timing events around two pieces of known work on one stream: each
    # interval is positive, the two add up to the whole (the same timestamps),
    # the reverse interval is its negative (as cudaEventElapsedTime gives), and
    # the whole fits inside the host's wall time around it, so the unit is
    # milliseconds.
    a, b, c = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    x = randn(256, 256, scale=0.05).to(DEV)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    a.record()
    y = _work(x, 4)
    b.record()
    z = _work(x, 8)
    c.record()
    c.synchronize()
    wall_ms = (time.perf_counter() - t0) * 1e3
    assert a.query() and b.query() and c.query()
    ab, bc, ac = a.elapsed_time(b), b.elapsed_time(c), a.elapsed_time(c)
    assert ab > 0 and bc > 0, (ab, bc)
    assert ac == pytest.approx(ab + bc, rel=1e-4, abs=1e-3)
    assert c.elapsed_time(a) == pytest.approx(-ac, rel=1e-4, abs=1e-3)
    assert ac <= wall_ms * 1.05 + 0.5, (ac, wall_ms)
    ref = x.cpu()
    assert_close(y, _work(ref, 4), "matmul")
    assert_close(z, _work(ref, 8), "matmul")


@requires_cuda
def test_elapsed_time_needs_timing_events():
    # Events made without timing (torch.cuda.Event()'s default) have no
    # timestamps to subtract: the runtime refuses, and PyTorch raises.
    a, b = torch.cuda.Event(), torch.cuda.Event()
    a.record()
    b.record()
    b.synchronize()
    with pytest.raises(RuntimeError):
        a.elapsed_time(b)


@requires_cuda
def test_event_orders_two_streams():
    producer, consumer = torch.cuda.Stream(), torch.cuda.Stream()
    done = torch.cuda.Event()
    a = randn(1500, seed=2)
    with torch.cuda.stream(producer):
        x = a.to(DEV, non_blocking=True)
        y = x.exp()
        done.record(producer)
    with torch.cuda.stream(consumer):
        consumer.wait_event(done)
        z = y * 2
    consumer.synchronize()
    assert_close(z, a.exp() * 2)


def test_manual_seed_reproduces():
    torch.manual_seed(1234)
    if DEV.type == "cuda":
        torch.cuda.manual_seed(1234)
    a = torch.rand(4096, device=DEV)
    b = torch.randn(4096, device=DEV)
    torch.manual_seed(1234)
    if DEV.type == "cuda":
        torch.cuda.manual_seed_all(1234)
    a2 = torch.rand(4096, device=DEV)
    b2 = torch.randn(4096, device=DEV)
    synchronize()
    assert torch.equal(a.cpu(), a2.cpu())
    assert torch.equal(b.cpu(), b2.cpu())
    # The values are a uniform and a normal sample, not constants.
    assert 0.0 <= a.min().item() and a.max().item() < 1.0
    assert 0.45 < a.mean().item() < 0.55
    assert abs(b.mean().item()) < 0.1 and 0.9 < b.std().item() < 1.1
    torch.manual_seed(4321)
    assert not torch.equal(torch.rand(4096, device=DEV).cpu(), a.cpu())
