// Detection of programs that carry NVIDIA's static CUDA runtime (nvcc's
// default), which rgpu cannot serve: their cudart talks to the driver through
// private tables rgpu does not provide. Such programs must be rebuilt with
// `nvcc -cudart shared`.
#pragma once

#include <string>

namespace rgpu::tools {

enum class CudartLinkage {
  kUnknown,  // not a 64-bit little-endian ELF file, or unreadable: a script, an interpreter's input...
  kNone,     // an ELF program with no CUDA runtime of its own (it may load one later)
  kShared,   // imports the runtime from libcudart.so (DT_NEEDED or imported cuda* symbols)
  kStatic,   // carries NVIDIA's static runtime
};

struct CudartInspection {
  CudartLinkage linkage = CudartLinkage::kUnknown;
  std::string reason;  // what decided it, for messages and logs
};

// Inspects the ELF file at `path`. Works on stripped programs: it reads the
// dynamic section and imported symbols, and the static runtime's own strings
// in the program's loaded sections, never the symbol table. Invalid or
// truncated input gives kUnknown, never a crash. Thread-safe (no state).
CudartInspection inspect_cudart(const std::string& path);

// The file `command` names as execvp would find it (through PATH when it has
// no slash); empty when not found.
std::string resolve_command(const std::string& command);

// For `rgpu run`: prints why and returns 2 when `command` is a program built
// with the static CUDA runtime, otherwise returns 0 (scripts, interpreters and
// programs it cannot read are let through).
int refuse_static_cudart(const std::string& command);

}  // namespace rgpu::tools
