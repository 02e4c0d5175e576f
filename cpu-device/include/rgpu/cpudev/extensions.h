// The CPU device's own entry points beyond the driver API, exported by
// librgpu-cpudev.so next to the cu* names (resolve them with dlsym: a driver
// without them is not the CPU device).
#pragma once

#include <cuda.h>

#include <cstddef>

extern "C" {

// Device printf text of kernels in `ctx` goes to `callback` instead of
// stdout, so a server can forward it to the client that launched them. A null
// callback restores stdout. Thread-safe.
CUresult rgpuCtxSetPrintfCallback(CUcontext ctx, void (*callback)(void* user, const char* text, size_t size),
                                  void* user);

// The messages of failed device asserts in kernels of `ctx` ("file:line:
// function: block: [..], thread: [..] Assertion `expr` failed.", one line per
// failing thread) go to `callback` instead of stderr, so a server can forward
// them to the client's stderr. A null callback restores stderr. Thread-safe.
CUresult rgpuCtxSetErrorOutputCallback(CUcontext ctx, void (*callback)(void* user, const char* text, size_t size),
                                       void* user);

// Why a kernel of `ctx` failed as it ran ("kernel K: illegal address:
// illegal write of 4 bytes at 0x..."), with the code its stream reports,
// goes to `callback` on the thread that ran it, so a server can pass the
// reason on to the client with the error. A null callback stops it.
// Thread-safe.
CUresult rgpuCtxSetErrorReasonCallback(CUcontext ctx,
                                       void (*callback)(void* user, CUresult code, const char* text, size_t size),
                                       void* user);

// Why the calling thread's last call of this library returned `code` (a
// kernel the device cannot run, a module or kernel it cannot load): copied
// into `text` (at most size - 1 bytes and a NUL), *length the bytes copied,
// 0 when that call noted no reason or returned another code. Clears the
// reason. CUDA_ERROR_INVALID_VALUE for a null pointer or size 0.
CUresult rgpuTakeErrorReason(CUresult code, char* text, size_t size, size_t* length);

// The device memory the variables of module `hmod` (its .global and .const
// arrays, by their declared sizes) hold, in *bytes, so that a server can
// count them against a quota. CUDA_ERROR_INVALID_HANDLE for an unknown
// module, CUDA_ERROR_INVALID_VALUE for a null pointer. Thread-safe.
CUresult rgpuModuleGetMemoryBytes(CUmodule hmod, unsigned long long* bytes);

// Whether kernel `f` can run on this device, asked before it is launched:
// *refusal is CUDA_SUCCESS, or the code cuLaunchKernel would return for it
// (CUDA_ERROR_NOT_SUPPORTED: its body holds an instruction the device cannot
// run exactly), with the reason in `text` as rgpuTakeErrorReason copies it.
// A server uses it to refuse such a launch in the launch call itself, not
// at a later call. CUDA_ERROR_INVALID_HANDLE for an unknown function,
// CUDA_ERROR_INVALID_VALUE for a null pointer or size 0. Thread-safe.
CUresult rgpuFuncGetLaunchRefusal(CUfunction f, CUresult* refusal, char* text, size_t size, size_t* length);

// Puts `ctx` in isolation group `group`. Contexts never given one are in
// group 0. A kernel of a context in group G loads, stores and atomically
// accesses only allocations made by contexts of group G and the globals of
// modules loaded in them; any other address is CUDA_ERROR_ILLEGAL_ADDRESS
// (sticky), exactly like an unmapped one. While a context of a group other
// than 0 is current, copies, memsets, frees and pointer queries refuse memory
// of other groups (CUDA_ERROR_INVALID_VALUE, cuMemGetAddressRange:
// CUDA_ERROR_NOT_FOUND). Call it before the context allocates memory or
// loads a module: afterwards a different group is CUDA_ERROR_NOT_PERMITTED.
// CUDA_ERROR_INVALID_CONTEXT for an unknown context; ~0ull is
// CUDA_ERROR_INVALID_VALUE. Thread-safe.
CUresult rgpuCtxSetIsolationGroup(CUcontext ctx, unsigned long long group);

// Stops the work of `ctx` now, as a server does when the client that owns the
// context is gone: a running kernel ends at its next cancellation check,
// queued kernels do not run, and the context gets the sticky error
// CUDA_ERROR_LAUNCH_FAILED, so waits on it return instead of hanging. The
// context stays valid until cuCtxDestroy. Thread-safe.
CUresult rgpuCtxAbort(CUcontext ctx);

// Limits the kernels of `ctx` to `share` (above 0, at most 1) of the
// device's kernel workers: each launch runs its blocks on at most
// max(1, round(share * workers)) threads at once, the launching thread
// included, so that contexts of several slices of one device divide its
// cores by their shares (docs/sharing.md). Launches already running keep
// their limit. CUDA_ERROR_INVALID_VALUE for a share outside (0, 1],
// CUDA_ERROR_INVALID_CONTEXT for an unknown context. Thread-safe.
CUresult rgpuCtxSetComputeShare(CUcontext ctx, float share);

// NVML's utilization rates of device `dev`, measured over the last sample
// period (the second before the call, at least 7/8 of it; see
// docs/cpu-device.md): *gpu is the percentage of that time during which one
// or more kernels ran on the device, *memory the percentage during which one
// or more copies or memsets to or from its memory ran. Both are 0..100.
// CUDA_ERROR_INVALID_DEVICE for an unknown device, CUDA_ERROR_INVALID_VALUE
// for a null pointer. Thread-safe.
CUresult rgpuDeviceGetUtilization(unsigned* gpu, unsigned* memory, CUdevice dev);

}  // extern "C"
