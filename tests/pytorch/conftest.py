"""Helpers for the PyTorch suite.

Every case computes on the device under test ('cuda', which rgpu provides)
and compares with the same computation on PyTorch's CPU device, within the
tolerances stated below per kind of computation and dtype.

`pytest --self-check` makes the device under test PyTorch's CPU device
instead. That is a self-check of the suite's own code only (every comparison
then holds trivially); it tests nothing of rgpu. Cases about the torch.cuda
API itself are skipped then. Only the flag on the command line enters it: an
environment variable could turn a run meant to test rgpu into one that tests
nothing, so RGPU_TORCH_TEST_DEVICE (which used to select it) in the
environment without --self-check stops the run with a usage error.
"""

import os
import sys

import pytest
import torch

# Decided when this file is imported, before pytest has parsed its options
# (the test modules import DEV and SELF_CHECK); pytest_configure below checks
# that the parsed option says the same.
SELF_CHECK = "--self-check" in sys.argv[1:]
DEV = torch.device("cpu" if SELF_CHECK else "cuda")
CPU = torch.device("cpu")

# The reference is PyTorch's own CPU code, not its oneDNN (mkldnn) backend:
# trixie's PyTorch 2.6 computes conv_transpose2d and the input gradient of
# stride-1 convolutions wrongly through oneDNN on AVX-512 hosts (errors of
# order 1, where its native CPU code and a float64 computation agree to
# 1e-6). This switch only affects computations on the CPU device.
torch.backends.mkldnn.enabled = False

# No TF32 on a GPU: float32 matmuls and convolutions in float32, as on the
# CPU, so that the tolerances below are those of float32 (TF32 would differ
# by about 1e-3 relative). tests/gpu/run.sh also sets NVIDIA_TF32_OVERRIDE=0.
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

FLOATS = [torch.float32, torch.float16, torch.bfloat16]

# (rtol, atol) per kind of computation and dtype. Integer and bool results
# must be equal. The values allow for what legitimately differs between the
# two devices: the order of floating-point sums, and transcendental functions
# that are correctly rounded to within an ulp or two on each side.
#   elementwise: one rounding of a result: a few ulps of float32; one ulp of
#     float16 (2^-10 relative) and of bfloat16 (2^-7), doubled.
#   reduction: sums over up to a few thousand terms in another order.
#   matmul: dot products of length up to a few hundred, accumulated in
#     float32 for every input dtype, then rounded once to the output dtype.
#   optim: a few optimizer steps, each an elementwise update.
TOLERANCES = {
    "elementwise": {
        torch.float64: (1e-10, 1e-12),
        torch.float32: (1e-5, 1e-6),
        torch.float16: (2e-3, 1e-3),
        torch.bfloat16: (1.6e-2, 1e-2),
    },
    "reduction": {
        torch.float64: (1e-10, 1e-10),
        torch.float32: (2e-5, 1e-5),
        torch.float16: (4e-3, 2e-3),
        torch.bfloat16: (3.2e-2, 2e-2),
    },
    "matmul": {
        torch.float64: (1e-10, 1e-10),
        torch.float32: (1e-4, 1e-5),
        torch.float16: (4e-3, 4e-3),
        torch.bfloat16: (1.6e-2, 1.6e-2),
    },
    "optim": {
        torch.float32: (1e-5, 1e-6),
    },
}


def tolerance(dtype, kind="elementwise"):
    """(rtol, atol) for a result of dtype computed by a kind of computation."""
    if not dtype.is_floating_point:
        return 0.0, 0.0
    return TOLERANCES[kind][dtype]


def move(obj, device):
    """obj with every tensor in it (nested lists, tuples, dicts) copied to
    device; a torch.device argument (the CPU) becomes device too, so that
    check(lambda d: torch.zeros(3, device=d), CPU) creates on each side."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, torch.device):
        return device
    if isinstance(obj, (list, tuple)):
        moved = [move(o, device) for o in obj]
        return type(obj)(moved) if not hasattr(obj, "_fields") else type(obj)(*moved)
    if isinstance(obj, dict):
        return {k: move(v, device) for k, v in obj.items()}
    return obj


def synchronize():
    """Waits for the device under test."""
    if DEV.type == "cuda":
        torch.cuda.synchronize()


def assert_close(actual, expected, kind="elementwise", msg=""):
    """actual, computed on the device under test, matches expected (computed on
    the CPU) within the tolerance for its kind and dtype. Nested tuples, lists
    and named tuples are compared element by element."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"{msg}: got {type(actual)}"
        assert actual.device.type == DEV.type, f"{msg}: result on {actual.device}, not {DEV}"
        assert actual.dtype == expected.dtype, f"{msg}: dtype {actual.dtype} != {expected.dtype}"
        rtol, atol = tolerance(expected.dtype, kind)
        torch.testing.assert_close(actual.cpu(), expected, rtol=rtol, atol=atol, equal_nan=True,
                                   msg=lambda m: f"{msg} ({kind}, {expected.dtype}): {m}")
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), msg
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, kind, f"{msg}[{i}]")
    else:
        assert actual == expected, f"{msg}: {actual} != {expected}"


def run_both(fn, *args, **kwargs):
    """fn on args (CPU tensors) and on copies of them on the device under test.
    Returns (device result, CPU result)."""
    expected = fn(*args, **kwargs)
    actual = fn(*move(args, DEV), **move(kwargs, DEV))
    synchronize()
    return actual, expected


def check(fn, *args, kind="elementwise", msg="", **kwargs):
    """run_both, then assert_close on the results."""
    actual, expected = run_both(fn, *args, **kwargs)
    assert_close(actual, expected, kind, msg or getattr(fn, "__name__", "fn"))
    return actual, expected


def randn(*shape, dtype=torch.float32, seed=0, scale=1.0):
    """A reproducible CPU tensor of normal values, made in float32 and
    rounded once to dtype (so both devices see the same inputs)."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(tuple(shape), generator=g) * scale).to(dtype)


def randint(low, high, *shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, shape, generator=g)


def skip_bf16_if_unsupported(dtype):
    if dtype == torch.bfloat16 and DEV.type == "cuda" and not torch.cuda.is_bf16_supported():
        pytest.skip("the device reports no bfloat16 support (torch.cuda.is_bf16_supported)")


requires_cuda = pytest.mark.skipif(
    SELF_CHECK, reason="self-check (--self-check): the torch.cuda API is not exercised")


def pytest_addoption(parser):
    parser.addoption("--self-check", action="store_true", default=False,
                     help="run the suite on PyTorch's CPU device: checks the suite's own code, tests nothing of rgpu")


def pytest_configure(config):
    flag = config.getoption("--self-check")
    if flag != SELF_CHECK:
        raise pytest.UsageError("--self-check must be given on the command line (it was seen by pytest but not in "
                                "sys.argv when conftest.py was imported)")
    env = os.environ.get("RGPU_TORCH_TEST_DEVICE")
    if env and not (flag and env == "cpu"):
        raise pytest.UsageError(
            "RGPU_TORCH_TEST_DEVICE=%s is set: the suite no longer takes its device from the environment. "
            "Unset it to test rgpu's CUDA device; pass --self-check for the self-check on PyTorch's CPU" % env)


def pytest_report_header(config):
    if SELF_CHECK:
        return f"device under test: {DEV} (self-check of the suite; rgpu is not tested)"
    return f"device under test: {DEV}, torch {torch.__version__}"


@pytest.fixture(autouse=True)
def _seeded():
    """Each case starts from the same global seed on every device."""
    torch.manual_seed(0)
    yield
