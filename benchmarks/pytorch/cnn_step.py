"""CNN training step time on the device under test (tests/pytorch/test_cnn.py's
network, batch 16, 3x32x32 images, SGD with momentum).

  python3 cnn_step.py [STEPS]     warm-up 3 steps, then STEPS timed steps

Prints one JSON line: device, steps, ms per step (median and mean). Run it
twice under RGPU_STATS with different STEPS to get the messages of a step
(docs/pytorch.md, "What a CNN step costs").
"""

import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/pytorch"))
from test_cnn import BATCH, Net  # noqa: E402

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
device = torch.device(os.environ.get("RGPU_TORCH_TEST_DEVICE") or "cuda")
torch.manual_seed(0)
model = Net().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x = torch.randn(BATCH, 3, 32, 32, device=device)
y = torch.randint(0, 10, (BATCH,), device=device)


def step():
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


for _ in range(3):
    step()
if device.type == "cuda":
    torch.cuda.synchronize()
times = []
for _ in range(steps):
    t0 = time.perf_counter()
    step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    times.append((time.perf_counter() - t0) * 1e3)
print(json.dumps({"device": str(device), "steps": steps,
                  "ms_median": round(statistics.median(times), 2) if times else None,
                  "ms_mean": round(statistics.mean(times), 2) if times else None}))
