"""A small CNN trained for a fixed number of steps on synthetic 32x32 images.

tests/gpu/run.sh runs it remote (under `rgpu run`) and local (the same
machine's GPU, no rgpu) and compares the two: every step's loss, and the step
time. The data and the initial weights are made on the CPU from a fixed seed
and copied to the device, so both runs start from the same bytes.

  python3 cnn_train.py [--device cuda|cpu] [--steps 30] [--batch 64]
                       [--cudnn auto|on|off] [--json FILE]

--cudnn auto tries one convolution with cuDNN first and turns cuDNN off (and
says so in the JSON) if the device refuses it; a remote run on a server whose
cuDNN is not remoted yet then still trains, through PyTorch's own kernels.
The JSON: device, torch version, cudnn mode, losses (one per step),
step_ms (one per step), step_ms_median (the steps after the warm-up).

TF32 is off (run.sh also sets NVIDIA_TF32_OVERRIDE=0), so that the losses of
two runs can be compared within float32's rounding; on the CPU, oneDNN is off
(see tests/pytorch/conftest.py).
"""

import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

WARMUP_STEPS = 5  # left out of the median: lazy loading, first kernels, allocator growth


class SmallCNN(nn.Module):
    """Two convolutions with batch norm and pooling, then a linear layer."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.fc = nn.Linear(32 * 8 * 8, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)  # 32 -> 16
        x = F.avg_pool2d(F.relu(self.bn2(self.conv2(x))), 2)  # 16 -> 8
        return self.fc(torch.flatten(x, 1))


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def choose_cudnn(mode, device):
    """Returns (enabled, note). auto: one small convolution decides."""
    if device.type != "cuda" or mode == "off":
        torch.backends.cudnn.enabled = False
        return False, "off" if device.type == "cuda" else "not used (cpu)"
    torch.backends.cudnn.enabled = True
    if mode == "on":
        return True, "on"
    try:
        x = torch.ones(1, 3, 8, 8, device=device)
        w = torch.ones(4, 3, 3, 3, device=device)
        F.conv2d(x, w, padding=1).sum().item()
        return True, "on (cudnn version %s)" % torch.backends.cudnn.version()
    except Exception as e:  # the device refused cuDNN: train without it
        torch.backends.cudnn.enabled = False
        return False, "off: a cuDNN convolution failed (%s)" % str(e).splitlines()[0][:160]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--cudnn", choices=["auto", "on", "off"], default="auto")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.mkldnn.enabled = False
    cudnn_enabled, cudnn_note = choose_cudnn(args.cudnn, device)

    # Data and weights from the CPU's generator: the same on every device.
    g = torch.Generator().manual_seed(args.seed)
    images = torch.randn(args.steps * args.batch, 3, 32, 32, generator=g)
    labels = torch.randint(0, 10, (args.steps * args.batch,), generator=g)
    model = SmallCNN()
    model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    images, labels = images.to(device), labels.to(device)
    synchronize(device)

    losses, step_ms = [], []
    for step in range(args.steps):
        lo, hi = step * args.batch, (step + 1) * args.batch
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(images[lo:hi]), labels[lo:hi])
        loss.backward()
        opt.step()
        losses.append(loss.item())  # also waits for the step's work
        step_ms.append((time.perf_counter() - t0) * 1e3)

    steady = step_ms[WARMUP_STEPS:] or step_ms
    out = {
        "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "cudnn": cudnn_note,
        "cudnn_enabled": cudnn_enabled,
        "tf32": torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32,
        "steps": args.steps,
        "batch": args.batch,
        "losses": losses,
        "step_ms": [round(t, 4) for t in step_ms],
        "step_ms_median": round(statistics.median(steady), 4) if steady else None,
        "warmup_steps": min(WARMUP_STEPS, args.steps),
    }
    text = json.dumps(out)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    print(text)
    finite = all(l == l and abs(l) != float("inf") for l in losses)
    return 0 if finite else 1


if __name__ == "__main__":
    sys.exit(main())
