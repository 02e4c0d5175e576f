"""An MLP (32 -> 64 -> 10) trains 50 steps on synthetic data with a fixed seed.

Its losses match the same training on PyTorch's CPU within 1e-4 relative in
float32, step by step, and so do the final weights.
"""

import copy

import pytest
import torch
import torch.nn.functional as F

from conftest import CPU, DEV, randn

STEPS = 50
BATCH = 64
RTOL = 1e-4


def synthetic_data():
    """512 samples of 32 features, labelled by a fixed random linear teacher."""
    x = randn(512, 32, seed=1)
    teacher = randn(32, 10, seed=2)
    y = (x @ teacher + 0.5 * randn(512, 10, seed=3)).argmax(1)
    return x, y


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))


def train(model, optimizer_name, device):
    model = copy.deepcopy(model).to(device)
    if optimizer_name == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    x, y = synthetic_data()
    x, y = x.to(device), y.to(device)
    losses = []
    for step in range(STEPS):
        start = (step * BATCH) % x.shape[0]
        xb, yb = x[start:start + BATCH], y[start:start + BATCH]
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {k: v.detach().cpu() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("optimizer_name", ["sgd", "adam"])
def test_mlp_trains_like_cpu(optimizer_name):
    model = make_model()
    losses_dev, weights_dev = train(model, optimizer_name, DEV)
    losses_cpu, weights_cpu = train(model, optimizer_name, CPU)
    # It learns: the last losses are well below the first.
    assert sum(losses_cpu[-8:]) / 8 < 0.7 * losses_cpu[0], losses_cpu
    for step, (a, e) in enumerate(zip(losses_dev, losses_cpu)):
        assert abs(a - e) <= RTOL * abs(e), f"step {step}: loss {a} on {DEV}, {e} on the CPU"
    assert weights_dev.keys() == weights_cpu.keys()
    for name in weights_cpu:
        torch.testing.assert_close(weights_dev[name], weights_cpu[name], rtol=RTOL, atol=1e-6,
                                   msg=lambda m, name=name: f"final {name}: {m}")
