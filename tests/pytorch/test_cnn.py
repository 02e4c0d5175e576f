"""A small CNN (two convolutions, batch norm, pooling, a linear layer) trains
30 steps on synthetic 32x32 images with a fixed seed. Its losses match the
same training on PyTorch's CPU within 1e-3 relative in float32, step by step.
And one mixed-precision step under torch.autocast(dtype=torch.bfloat16)."""

import copy

import pytest
import torch
import torch.nn.functional as F

from conftest import CPU, DEV, randint, randn, requires_cuda, skip_bf16_if_unsupported

STEPS = 30
BATCH = 16
RTOL = 1e-3


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.avg_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def data():
    x = randn(BATCH * 4, 3, 32, 32, seed=1)
    y = randint(0, 10, BATCH * 4, seed=2)
    return x, y


def train(model, device):
    model = copy.deepcopy(model).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y = data()
    x, y = x.to(device), y.to(device)
    losses = []
    for step in range(STEPS):
        start = (step * BATCH) % x.shape[0]
        opt.zero_grad()
        loss = F.cross_entropy(model(x[start:start + BATCH]), y[start:start + BATCH])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_cnn_trains_like_cpu():
    torch.manual_seed(0)
    model = Net()
    losses_dev = train(model, DEV)
    losses_cpu = train(model, CPU)
    assert losses_cpu[-1] < losses_cpu[0], losses_cpu  # it learns (the labels repeat every 4 batches)
    for step, (a, e) in enumerate(zip(losses_dev, losses_cpu)):
        assert abs(a - e) <= RTOL * abs(e), f"step {step}: {a} vs {e} (device {losses_dev}, cpu {losses_cpu})"


@requires_cuda
def test_cnn_bf16_autocast_step():
    skip_bf16_if_unsupported(torch.bfloat16)
    torch.manual_seed(0)
    model = Net()
    reference = copy.deepcopy(model)
    model = model.to(DEV)
    x, y = data()
    x, y = x[:BATCH], y[:BATCH]
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        out = model(x.to(DEV))
        assert out.dtype == torch.bfloat16  # the convolutions and the linear layer ran in bfloat16
        loss = F.cross_entropy(out, y.to(DEV))
    loss.backward()
    # The same step in float32 on the CPU: bfloat16's rounding (2^-8) allows a
    # few percent.
    loss_ref = F.cross_entropy(reference(x), y)
    loss_ref.backward()
    assert abs(loss.item() - loss_ref.item()) <= 3e-2 * abs(loss_ref.item()), (loss.item(), loss_ref.item())
    for (name, p), r in zip(model.named_parameters(), reference.parameters()):
        assert p.grad.dtype == torch.float32, name
        g, e = p.grad.cpu(), r.grad
        assert (g - e).norm() <= 0.1 * e.norm() + 1e-3, f"{name}: {(g - e).norm()} vs {e.norm()}"
