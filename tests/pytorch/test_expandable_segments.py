"""The caching allocator's expandable segments
(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), which use the driver's
virtual memory management: cuMemAddressReserve, cuMemCreate, cuMemMap,
cuMemSetAccess, cuMemUnmap, cuMemRelease, remoted by rgpu.

test_suite_with_expandable_segments runs the whole suite again in a child
process with the setting on; the checks below it run in that child only (the
setting must be made before CUDA starts).
"""

import os
import subprocess
import sys

import pytest
import torch

from conftest import CPU, DEV, SELF_CHECK, randn

SETTING = "expandable_segments:True"
ENABLED = SETTING in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
HERE = os.path.dirname(os.path.abspath(__file__))

# What the child runs: every file of the suite, these checks included.
SUITE = sorted(f for f in os.listdir(HERE) if f.startswith("test_") and f.endswith(".py"))

needs_cuda = pytest.mark.skipif(SELF_CHECK, reason="a torch.cuda allocator feature")


@needs_cuda
@pytest.mark.skipif(ENABLED, reason="this is the child run")
def test_suite_with_expandable_segments():
    env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=SETTING)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x"] + [os.path.join(HERE, f) for f in SUITE]
    r = subprocess.run(cmd, env=env, cwd=HERE, capture_output=True, text=True, timeout=840)
    tail = (r.stdout + r.stderr)[-4000:]
    assert r.returncode == 0, tail
    assert " passed" in r.stdout, tail


@needs_cuda
@pytest.mark.skipif(not ENABLED, reason="runs in the child, with expandable segments")
def test_segments_are_expandable_and_grow():
    torch.cuda.empty_cache()
    small = torch.ones(1024, device=DEV)
    # Large enough to need more than one 2 MiB chunk, and to span chunks.
    big = [torch.full((3 << 20,), float(i), device=DEV) for i in range(3)]
    segments = torch.cuda.memory_snapshot()
    assert segments, "no segments"
    assert all(s.get("is_expandable") for s in segments), segments
    assert sum(s["total_size"] for s in segments) >= 3 * (12 << 20)
    for i, t in enumerate(big):
        assert t.sum().item() == float(i) * (3 << 20)
    assert small.sum().item() == 1024
    # Freed and emptied: the segments unmap their chunks.
    reserved = torch.cuda.memory_reserved()
    del big
    torch.cuda.empty_cache()
    assert torch.cuda.memory_reserved() < reserved


@needs_cuda
@pytest.mark.skipif(not ENABLED, reason="runs in the child, with expandable segments")
def test_compute_across_chunk_boundaries_matches_cpu():
    x = randn(1500, 1000, seed=7)  # about 6 MiB: several chunks
    y = randn(1000, 300, seed=8)
    got = (x.to(DEV) @ y.to(DEV)).relu().sum(dim=0)
    want = (x @ y).relu().sum(dim=0)
    torch.testing.assert_close(got.to(CPU), want, rtol=1e-4, atol=1e-3)
