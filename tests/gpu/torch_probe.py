"""What PyTorch sees under `rgpu run`, and which CUDA libraries it mapped.

A few operations (a matmul and a convolution in float32), each judged against
PyTorch's CPU on the same inputs within a stated tolerance, then the
process's mapped libraries from /proc/self/maps: each CUDA library's file,
and whether it is rgpu's client library (remoted) or NVIDIA's own (its code
runs in this process, over whatever libcuda.so.1 the process has). One JSON
object on stdout, and in --json FILE. With --dump DIR each device result is
also written to DIR/NAME.f32 (raw little-endian float32), so that
tests/gpu/compare.py can judge a remote run against a local one.

TF32 is off (and run.sh sets NVIDIA_TF32_OVERRIDE=0): a TF32 product differs
from float32 by about 1e-3 relative, which would hide rgpu's own errors.
Exits 1 when CUDA is unavailable or any result is outside its tolerance.
"""

import argparse
import json
import os
import re
import sys
import traceback

# The libraries of a CUDA PyTorch process, by soname stem.
CUDA_LIBS = re.compile(
    r"lib(cuda|cudart|cublas|cublasLt|cudnn\w*|cufft\w*|curand|cusolver\w*|cusparse\w*|nccl|nvrtc\w*|"
    r"nvJitLink|nvToolsExt|nvidia-ml|cupti|cufile\w*|nvshmem\w*|rgpu\w*)\.so")

# |device - cpu| <= ATOL + RTOL * |cpu|, element by element. The matmul sums
# 256 products of N(0,1) values (results of about 16, so float32's rounding
# in another order is about 1e-5); the convolution sums 27. TF32 would miss
# these by 1e-2 and more.
RTOL = 1e-4
ATOL = 1e-4


def mapped_libraries():
    seen = {}
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) < 6:
                continue
            path = parts[5].strip()
            name = os.path.basename(path)
            if not CUDA_LIBS.match(name) or path in seen:
                continue
            real = os.path.realpath(path)
            rgpu = os.path.basename(real) == "librgpu.so" or "/rgpu-nvrtc/" in real
            seen[path] = {"file": path, "provider": "rgpu" if rgpu else "nvidia"}
    return sorted(seen.values(), key=lambda e: e["file"])


def attempt(out, name, fn):
    try:
        out[name] = fn()
    except Exception as e:
        out[name] = {"ok": False,
                     "error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")}


def judged(torch, device_result, reference, dump, name):
    """The comparison of one device result with the CPU's, and its verdict."""
    d = device_result.cpu()
    if dump:
        d.contiguous().numpy().astype("<f4").tofile(os.path.join(dump, name + ".f32"))
    diff = (d - reference).abs()
    bound = ATOL + RTOL * reference.abs()
    return {"max_abs_diff": float(diff.max()), "max_ref": float(reference.abs().max()),
            "rtol": RTOL, "atol": ATOL, "ok": bool((diff <= bound).all())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default="")
    ap.add_argument("--dump", default="", help="a folder for the device results (raw float32)")
    args = ap.parse_args()
    if args.dump:
        os.makedirs(args.dump, exist_ok=True)
    out = {"ld_preload": os.environ.get("LD_PRELOAD", ""),
           "ld_library_path": os.environ.get("LD_LIBRARY_PATH", ""),
           "nvidia_tf32_override": os.environ.get("NVIDIA_TF32_OVERRIDE", "")}
    checks = ("matmul", "conv2d")
    try:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        # The CPU reference through PyTorch's native code, not oneDNN (see
        # tests/pytorch/conftest.py for why).
        torch.backends.mkldnn.enabled = False
        out["torch"] = torch.__version__
        out["torch_cuda"] = torch.version.cuda
        out["cuda_available"] = torch.cuda.is_available()
        if out["cuda_available"]:
            out["device"] = torch.cuda.get_device_name(0)
            out["capability"] = list(torch.cuda.get_device_capability(0))
            out["device_count"] = torch.cuda.device_count()
            # The same inputs in every run (remote, local), from the CPU's generator.
            g = torch.Generator().manual_seed(20240)

            def matmul():
                a = torch.randn(256, 256, generator=g)
                b = torch.randn(256, 256, generator=g)
                return judged(torch, a.cuda() @ b.cuda(), a @ b, args.dump, "matmul")

            def conv():
                x = torch.randn(2, 3, 16, 16, generator=g)
                w = torch.randn(8, 3, 3, 3, generator=g)
                d = torch.nn.functional.conv2d(x.cuda(), w.cuda(), padding=1)
                r = judged(torch, d, torch.nn.functional.conv2d(x, w, padding=1), args.dump, "conv2d")
                r["cudnn_version"] = torch.backends.cudnn.version()
                return r

            attempt(out, "matmul", matmul)
            attempt(out, "conv2d", conv)
    except Exception:
        out["error"] = traceback.format_exc(limit=3)
    out["libraries"] = mapped_libraries()
    out["ok"] = bool(out.get("cuda_available")) and all(out.get(c, {}).get("ok") for c in checks)
    text = json.dumps(out)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
