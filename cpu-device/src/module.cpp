// Module loading: image detection, PTX selection, parsing, variable placement.
#include "module.h"

#include <cstring>

#include "errors.h"
#include "rgpu/common/log.h"
#include "rgpu/fatbin/fatbin.h"
#include "spec.h"

namespace rgpu::cpudev {

namespace {

// The compute capability the CPU device reports (8.0).
constexpr uint32_t kSm = kSpec.sm();

// The PTX text to run for the image `bytes` of kind `kind`: the best PTX for
// kSm, else (the interpreter is not tied to an architecture) the newest PTX
// there is.
CUresult pick_ptx(fatbin::ImageKind kind, fatbin::Bytes bytes, std::string* ptx) {
  if (kind == fatbin::ImageKind::kPtx) {
    ptx->assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return CUDA_SUCCESS;
  }
  if (kind == fatbin::ImageKind::kElf) {  // SASS only
    note_reason(CUDA_ERROR_NO_BINARY_FOR_GPU, "module is a cubin (GPU machine code); the CPU device runs PTX only");
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  auto code = fatbin::select_code(bytes, kSm, fatbin::SelectPolicy::kPtxOnly);
  if (!code) code = fatbin::select_code(bytes, 0xffffffffu, fatbin::SelectPolicy::kPtxOnly);
  if (!code) {
    RGPU_WARN("cpudev module has no usable ptx reason=\"%s\"", code.status().message().c_str());
    note_reason(code.status().kind() == ErrorKind::kInvalidArgument ? CUDA_ERROR_INVALID_IMAGE
                                                                      : CUDA_ERROR_NO_BINARY_FOR_GPU,
                "module has no PTX the CPU device can run: " + code.status().message());
    return code.status().kind() == ErrorKind::kInvalidArgument ? CUDA_ERROR_INVALID_IMAGE
                                                                : CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  if (code->kind != fatbin::EntryKind::kPtx) {
    note_reason(CUDA_ERROR_NO_BINARY_FOR_GPU, "fatbin holds no PTX; the CPU device runs PTX only");
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  ptx->assign(reinterpret_cast<const char*>(code->contents.data()), code->contents.size());
  return CUDA_SUCCESS;
}

}  // namespace

CUresult Module::load(const void* image, uint64_t handle, uint64_t context, int device, uint64_t group,
                      DeviceMemory* memory, ProgramCache* programs, std::shared_ptr<Module>* out) {
  auto detected = fatbin::image_from_pointer(image);
  if (!detected) {
    RGPU_WARN("cpudev module image rejected reason=\"%s\"", detected.status().message().c_str());
    note_reason(CUDA_ERROR_INVALID_IMAGE, "module image rejected: " + detected.status().message());
    return CUDA_ERROR_INVALID_IMAGE;
  }
  // The image's own bytes name the program: one loaded before (by any
  // context or session) is neither decompressed nor parsed again.
  CUresult picked = CUDA_SUCCESS;
  auto program = programs->get(
      fatbin::content_hash(detected->bytes),
      [&](uint64_t* text_bytes) -> Result<std::shared_ptr<const ptx::Program>> {
        std::string text;
        picked = pick_ptx(detected->kind, detected->bytes, &text);
        if (picked != CUDA_SUCCESS) return invalid_argument("no ptx");
        *text_bytes = text.size();
        // Kernels are decoded when cuModuleGetFunction first names them: a
        // large module (hundreds of kernels) costs little more to load than
        // a small one.
        auto parsed = ptx::Program::parse(text, ptx::Decode::kOnUse);
        if (!parsed) return parsed.status();
        return std::shared_ptr<const ptx::Program>(std::move(parsed.value()));
      });
  if (picked != CUDA_SUCCESS) return picked;
  if (!program) {
    RGPU_WARN("cpudev ptx rejected reason=\"%s\"", program.status().message().c_str());
    const CUresult r =
        program.status().kind() == ErrorKind::kUnimplemented ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_PTX;
    note_reason(r, "module's PTX rejected by the CPU device: " + program.status().message());
    return r;
  }
  std::shared_ptr<Module> m(new Module(handle, context, device, memory));
  m->program_ = std::move(program.value());
  const auto& vars = m->program_->variables();
  m->addresses_.assign(vars.size(), 0);
  for (size_t i = 0; i < vars.size(); ++i) {
    const ptx::VariableInfo& v = vars[i];
    if (v.is_extern || v.size == 0 || (v.space != ptx::Space::kGlobal && v.space != ptx::Space::kConst)) continue;
    auto addr = memory->allocate(v.size, handle, group);  // page aligned: any .align fits
    if (!addr) return CUDA_ERROR_OUT_OF_MEMORY;     // ~Module frees what was placed
    m->addresses_[i] = *addr;
    m->memory_bytes_ += v.size;
    size_t n = std::min<size_t>(v.init.size(), v.size);
    if (n) std::memcpy(reinterpret_cast<void*>(*addr), v.init.data(), n);
    if (v.space == ptx::Space::kConst) m->const_bytes_ += v.size;
  }
  *out = std::move(m);
  return CUDA_SUCCESS;
}

Module::~Module() { memory_->release_owner(handle_); }

Function::Function(uint64_t handle, const std::shared_ptr<Module>& module, int index)
    : handle_(handle), module_handle_(module->handle()), module_(module), index_(index) {
  int static_shared = static_cast<int>(module->program().kernels()[static_cast<size_t>(index)].static_shared_bytes);
  max_dynamic_shared_ = static_shared < kSpec.shared_per_block ? kSpec.shared_per_block - static_shared : 0;
}

const std::string& Function::unsupported_reason(const Module& module) {
  std::call_once(checked_, [&] { unsupported_ = module.program().unsupported_reason(index_); });
  return unsupported_;
}

std::string Function::launch_refusal(const Module& module) {
  const std::string& why = unsupported_reason(module);
  if (why.empty()) return {};
  return "kernel " + module.program().kernels()[static_cast<size_t>(index_)].name + " cannot run on the CPU device: " + why;
}

}  // namespace rgpu::cpudev
