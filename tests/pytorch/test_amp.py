"""Mixed precision as users train with it: torch.autocast in float16 with a
GradScaler, and in bfloat16, on a small transformer classifier (attention
through PyTorch's default kernels, layer norm, a GELU MLP), against the same
steps in float32 on PyTorch's CPU. Half precision rounds every matmul, so the
losses are compared with a tolerance for that, step by step."""

import copy

import pytest
import torch

from conftest import CPU, DEV, randint, randn, skip_bf16_if_unsupported, synchronize

STEPS = 4


def model():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    return torch.nn.Sequential(layer, torch.nn.Flatten(), torch.nn.Linear(16 * 64, 10))


def train(net, device, dtype=None, scaler=None):
    net = copy.deepcopy(net).to(device).train()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    x, y = randn(8, 16, 64, seed=1).to(device), randint(0, 10, 8, seed=2).to(device)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        with torch.autocast(device_type=device.type, dtype=dtype, enabled=dtype is not None):
            loss = torch.nn.functional.cross_entropy(net(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        losses.append(loss.item())
    synchronize()
    return losses


# Relative to the loss, plus an absolute floor for the last steps, where the
# eight samples are learnt and the loss falls toward zero.
@pytest.mark.parametrize("dtype,rel", [(torch.float16, 1e-2), (torch.bfloat16, 4e-2)])
def test_autocast_training_follows_float32(dtype, rel):
    skip_bf16_if_unsupported(dtype)
    net = model()
    want = train(net, CPU)
    scaler = torch.amp.GradScaler(DEV.type) if dtype == torch.float16 else None
    got = train(net, DEV, dtype, scaler)
    for step, (g, w) in enumerate(zip(got, want)):
        assert abs(g - w) <= rel * abs(w) + 1e-4, f"step {step}: {got} against {want}"
    if scaler is not None:
        assert scaler.get_scale() > 0 and not any(map(lambda v: v != v, got))
