"""What PyTorch sees under `rgpu run`, and which CUDA libraries it mapped.

A few operations (a matmul and a convolution, against the CPU), then the
process's mapped libraries from /proc/self/maps: each CUDA library's file,
and whether it is rgpu's client library (remoted) or NVIDIA's own (its code
runs in this process, over whatever libcuda.so.1 the process has). One JSON
object on stdout, and in --json FILE.
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
        out[name] = {"error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    out = {"ld_preload": os.environ.get("LD_PRELOAD", ""),
           "ld_library_path": os.environ.get("LD_LIBRARY_PATH", "")}
    try:
        import torch
        out["torch"] = torch.__version__
        out["torch_cuda"] = torch.version.cuda
        out["cuda_available"] = torch.cuda.is_available()
        if out["cuda_available"]:
            out["device"] = torch.cuda.get_device_name(0)
            out["capability"] = list(torch.cuda.get_device_capability(0))
            out["device_count"] = torch.cuda.device_count()

            def matmul():
                a = torch.randn(256, 256)
                b = torch.randn(256, 256)
                d = (a.cuda() @ b.cuda()).cpu()
                return {"max_abs_diff": float((d - a @ b).abs().max())}

            def conv():
                x = torch.randn(2, 3, 16, 16)
                w = torch.randn(8, 3, 3, 3)
                d = torch.nn.functional.conv2d(x.cuda(), w.cuda(), padding=1).cpu()
                return {"max_abs_diff": float((d - torch.nn.functional.conv2d(x, w, padding=1)).abs().max()),
                        "cudnn_version": torch.backends.cudnn.version()}

            attempt(out, "matmul", matmul)
            attempt(out, "conv2d", conv)
    except Exception:
        out["error"] = traceback.format_exc(limit=3)
    out["libraries"] = mapped_libraries()
    text = json.dumps(out)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0 if out.get("cuda_available") else 1


if __name__ == "__main__":
    sys.exit(main())
