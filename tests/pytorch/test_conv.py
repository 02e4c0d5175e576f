"""Convolutions through cuDNN (rgpu's remoted cuDNN; on the CPU device its
oneDNN stand-in): conv2d, conv_transpose2d and conv3d, forward and backward
(input, weight and bias gradients), against PyTorch's CPU.

Shapes are small: each case's point is a layout or a parameter (stride,
padding, dilation, groups, channels-last, a dtype), not size.
"""

import pytest
import torch
import torch.nn.functional as F

from conftest import CPU, DEV, FLOATS, assert_close, randn, skip_bf16_if_unsupported, synchronize


def forward_backward(fn, inputs, device, memory_format=None):
    """fn(*inputs) on device, then the gradients of a fixed weighting of its
    output with respect to every input. Returns (output, grads), on device."""
    leaves = []
    for t in inputs:
        t = t.to(device)
        if memory_format is not None and t.dim() == 4:
            t = t.contiguous(memory_format=memory_format)
        leaves.append(t.detach().requires_grad_())
    out = fn(*leaves)
    weight = randn(*out.shape, seed=99).to(out.dtype).to(device)
    (out * weight).sum().backward()
    if device.type == "cuda":
        synchronize()
    return out.detach(), [t.grad for t in leaves]


def check_fb(fn, inputs, dtype=torch.float32, memory_format=None):
    out, grads = forward_backward(fn, inputs, DEV, memory_format)
    out_cpu, grads_cpu = forward_backward(fn, inputs, CPU, memory_format)
    assert_close(out, out_cpu, "matmul", "output")
    for i, (g, e) in enumerate(zip(grads, grads_cpu)):
        # A gradient is a sum over the batch and the positions: a longer one.
        assert_close(g, e, "reduction" if dtype == torch.float32 else "matmul", f"grad {i}")


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, 1, 1, 1), (2, 0, 1, 1), (1, 2, 2, 1), (2, 1, 1, 2), (1, 1, 1, 4),
], ids=["plain", "stride2", "dilated", "groups2", "depthwise"])
def test_conv2d(stride, padding, dilation, groups):
    x = randn(2, 4, 9, 10, seed=1)
    w = randn(8, 4 // groups, 3, 3, seed=2, scale=0.3)
    b = randn(8, seed=3)
    check_fb(lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation, groups), [x, w, b])


def test_conv2d_asymmetric_kernel_no_bias():
    x = randn(3, 3, 7, 11, seed=4)
    w = randn(5, 3, 1, 4, seed=5, scale=0.3)
    check_fb(lambda x, w: F.conv2d(x, w, None, (1, 2), (0, 1)), [x, w])


def test_conv2d_channels_last():
    x = randn(2, 6, 8, 8, seed=6)
    w = randn(4, 6, 3, 3, seed=7, scale=0.3)
    check_fb(lambda x, w: F.conv2d(x, w, padding=1), [x, w], memory_format=torch.channels_last)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_conv2d_half(dtype):
    skip_bf16_if_unsupported(dtype)
    x = randn(2, 4, 8, 8, dtype=dtype, seed=8)
    w = randn(6, 4, 3, 3, dtype=dtype, seed=9, scale=0.3)
    # PyTorch's CPU convolution in these types: compare with float32 rounded once.
    out = F.conv2d(x.to(DEV), w.to(DEV), padding=1)
    synchronize()
    expected = F.conv2d(x.float(), w.float(), padding=1).to(dtype)
    assert_close(out, expected, "matmul", "output")


@pytest.mark.parametrize("stride,padding,output_padding,groups", [(1, 0, 0, 1), (2, 1, 1, 1), (2, 1, 0, 2)],
                         ids=["plain", "stride2", "groups2"])
def test_conv_transpose2d(stride, padding, output_padding, groups):
    x = randn(2, 4, 5, 6, seed=10)
    w = randn(4, 6 // groups, 3, 3, seed=11, scale=0.3)
    b = randn(6, seed=12)
    check_fb(lambda x, w, b: F.conv_transpose2d(x, w, b, stride, padding, output_padding, groups), [x, w, b])


@pytest.mark.parametrize("stride,padding,dilation", [(1, 1, 1), (2, 0, 1), (1, 2, 2)],
                         ids=["plain", "stride2", "dilated"])
def test_conv3d(stride, padding, dilation):
    x = randn(2, 3, 5, 6, 6, seed=13)
    w = randn(4, 3, 3, 3, 3, seed=14, scale=0.2)
    b = randn(4, seed=15)
    check_fb(lambda x, w, b: F.conv3d(x, w, b, stride, padding, dilation), [x, w, b])


def test_conv1d():
    x = randn(3, 4, 20, seed=16)
    w = randn(5, 4, 3, seed=17, scale=0.3)
    check_fb(lambda x, w: F.conv1d(x, w, padding=1, stride=2), [x, w])


@pytest.mark.parametrize("flag", ["benchmark", "deterministic"])
def test_conv2d_benchmark_and_deterministic(flag):
    # benchmark: PyTorch times every engine the heuristics offer (cuDNN's
    # find); deterministic: it keeps only engines without a
    # non-determinism note.
    old = getattr(torch.backends.cudnn, flag)
    setattr(torch.backends.cudnn, flag, True)
    try:
        x = randn(2, 3, 7, 7, seed=18)
        w = randn(5, 3, 3, 3, seed=19, scale=0.3)
        check_fb(lambda x, w: F.conv2d(x, w, stride=2, padding=1), [x, w])
    finally:
        setattr(torch.backends.cudnn, flag, old)
