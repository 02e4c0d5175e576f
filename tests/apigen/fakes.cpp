// The fake driver and session of tests/apigen (see fakes.h).
#include "fakes.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "apigen_test_pack.h"
#include "../../protocol/generated/cublasLt_pack.h"
#include "rgpu/protocol/cusparse_wire.h"
#include "../../protocol/generated/driver_pack.h"
#include "library_rows.h"
#include "rgpu/protocol/lt_desc.h"

namespace rgpu::server::apigen_test {
namespace {

using protocol::HandleKind;
using protocol::make_handle;

CUresult CUDAAPI mem_get_info(size_t* free_bytes, size_t* total) {
  ++driver_log().calls;
  *free_bytes = 100;
  *total = 200;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI mem_get_address_range(CUdeviceptr* base, size_t* size, CUdeviceptr ptr) {
  ++driver_log().calls;
  driver_log().got_null_out = !base || !size;
  if (base) *base = ptr & ~CUdeviceptr{0xff};
  if (size) *size = 0x100;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI stream_priority_range(int* least, int* greatest) {
  ++driver_log().calls;
  driver_log().got_null_out = !least || !greatest;
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI func_get_name(const char** name, CUfunction f) {
  ++driver_log().calls;
  driver_log().function = f;
  *name = "vector_add";
  return CUDA_SUCCESS;
}
CUresult CUDAAPI event_create(CUevent* event, unsigned flags) {
  ++driver_log().calls;
  driver_log().flags = flags;
  *event = reinterpret_cast<CUevent>(uintptr_t{0xE0E0});
  return CUDA_SUCCESS;
}
CUresult CUDAAPI event_destroy(CUevent event) {
  driver_log().destroyed.push_back(event);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI event_query(CUevent) {
  ++driver_log().calls;
  return CUDA_ERROR_NOT_READY;
}
CUresult CUDAAPI event_record(CUevent, CUstream stream) {
  ++driver_log().calls;
  driver_log().stream = stream;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI event_record_with_flags(CUevent, CUstream stream, unsigned flags) {
  ++driver_log().calls;
  driver_log().stream = stream;
  driver_log().flags = flags;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI event_elapsed(float* ms, CUevent, CUevent) {
  ++driver_log().calls;
  *ms = 2.5f;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI stream_create(CUstream* stream, unsigned flags) {
  ++driver_log().calls;
  driver_log().flags = flags;
  *stream = reinterpret_cast<CUstream>(uintptr_t{0x5E5E});
  return CUDA_SUCCESS;
}
CUresult CUDAAPI stream_create_with_priority(CUstream* stream, unsigned flags, int) {
  return stream_create(stream, flags);
}
CUresult CUDAAPI stream_destroy(CUstream) {
  ++driver_log().calls;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI stream_get_flags(CUstream stream, unsigned* flags) {
  ++driver_log().calls;
  driver_log().stream = stream;
  *flags = CU_STREAM_NON_BLOCKING;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI stream_get_priority(CUstream stream, int* priority) {
  ++driver_log().calls;
  driver_log().stream = stream;
  *priority = -1;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI ctx_get_flags(unsigned* flags) {
  ++driver_log().calls;
  *flags = CU_CTX_SCHED_AUTO;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI stream_set_attribute(CUstream stream, CUstreamAttrID, const CUstreamAttrValue*) {
  ++driver_log().calls;
  driver_log().stream = stream;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI stream_get_attribute(CUstream stream, CUstreamAttrID, CUstreamAttrValue* value) {
  ++driver_log().calls;
  driver_log().stream = stream;
  std::memset(value, 0, sizeof *value);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI no_arguments() {
  ++driver_log().calls;
  return CUDA_SUCCESS;
}
CUresult device_get_utilization(unsigned* gpu, unsigned* memory, CUdevice) {
  ++driver_log().calls;
  *gpu = 50;
  *memory = 25;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI stream_query(CUstream stream) {
  ++driver_log().calls;
  driver_log().stream = stream;
  return CUDA_ERROR_NOT_READY;
}
CUresult CUDAAPI memset_d8(CUdeviceptr dst, unsigned char value, size_t n) {
  ++driver_log().calls;
  std::memset(reinterpret_cast<void*>(dst), value, n);
  return CUDA_SUCCESS;
}
// The 2-D memsets: every row filled for real (the allocations are host memory).
template <class T>
CUresult fill_2d(CUdeviceptr dst, size_t pitch, T value, size_t width, size_t height) {
  ++driver_log().calls;
  if (width == 0) return CUDA_SUCCESS;  // as the driver: any height of nothing is nothing
  for (size_t r = 0; r < height; ++r) {
    for (size_t i = 0; i < width; ++i) std::memcpy(reinterpret_cast<void*>(dst + r * pitch + i * sizeof(T)), &value, sizeof(T));
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI memset_d2d8(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h) { return fill_2d(d, p, v, w, h); }
CUresult CUDAAPI memset_d2d16(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h) {
  return fill_2d(d, p, v, w, h);
}
CUresult CUDAAPI memset_d2d32(CUdeviceptr d, size_t p, unsigned v, size_t w, size_t h) { return fill_2d(d, p, v, w, h); }
CUresult CUDAAPI memset_d2d8_async(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h, CUstream s) {
  driver_log().stream = s;
  return fill_2d(d, p, v, w, h);
}
CUresult CUDAAPI memset_d2d16_async(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h, CUstream s) {
  driver_log().stream = s;
  return fill_2d(d, p, v, w, h);
}
CUresult CUDAAPI memset_d2d32_async(CUdeviceptr d, size_t p, unsigned v, size_t w, size_t h, CUstream s) {
  driver_log().stream = s;
  return fill_2d(d, p, v, w, h);
}
CUresult CUDAAPI memcpy_htod(CUdeviceptr dst, const void* src, size_t n) {
  ++driver_log().calls;
  if (n) std::memcpy(reinterpret_cast<void*>(dst), src, n);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI memcpy_dtoh(void* dst, CUdeviceptr src, size_t n) {
  ++driver_log().calls;
  if (n) std::memcpy(dst, reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI func_set_attribute(CUfunction f, CUfunction_attribute attribute, int value) {
  ++driver_log().calls;
  driver_log().function = f;
  driver_log().attribute = attribute;
  driver_log().value = value;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI device_get_uuid(CUuuid* uuid, CUdevice device) {
  ++driver_log().calls;
  // Unsigned: the fuzzer asks for device INT_MAX too.
  for (size_t i = 0; i < sizeof uuid->bytes; ++i) {
    uuid->bytes[i] = static_cast<char>(static_cast<unsigned>(device) + static_cast<unsigned>(i));
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI module_get_global(CUdeviceptr* ptr, size_t* bytes, CUmodule, const char* name) {
  ++driver_log().calls;
  driver_log().got_null_out = !ptr || !bytes;
  if (std::strcmp(name, "counter") != 0) return CUDA_ERROR_NOT_FOUND;
  if (ptr) *ptr = 0x2000;
  if (bytes) *bytes = 8;
  return CUDA_SUCCESS;
}

}  // namespace

DriverLog& driver_log() {
  static DriverLog log;
  return log;
}

std::shared_ptr<DriverTable> fake_driver() {
  auto t = std::make_shared<DriverTable>();
  t->cuMemGetInfo = mem_get_info;
  t->cuMemGetAddressRange = mem_get_address_range;
  t->cuCtxGetStreamPriorityRange = stream_priority_range;
  t->cuFuncGetName = func_get_name;
  t->cuEventCreate = event_create;
  t->cuEventDestroy = event_destroy;
  t->cuEventQuery = event_query;
  t->cuEventRecord = event_record;
  t->cuEventRecordWithFlags = event_record_with_flags;
  t->cuEventElapsedTime = event_elapsed;
  t->cuStreamQuery = stream_query;
  t->cuStreamCreate = stream_create;
  t->cuCtxGetFlags = ctx_get_flags;
  t->cuStreamSetAttribute = stream_set_attribute;
  t->cuStreamGetAttribute = stream_get_attribute;
  t->cuCtxResetPersistingL2Cache = no_arguments;
  t->cuProfilerStart = no_arguments;
  t->cuProfilerStop = no_arguments;
  t->rgpuDeviceGetUtilization = device_get_utilization;
  t->cuStreamCreateWithPriority = stream_create_with_priority;
  t->cuStreamDestroy = stream_destroy;
  t->cuStreamGetFlags = stream_get_flags;
  t->cuStreamGetPriority = stream_get_priority;
  t->cuMemsetD8 = memset_d8;
  t->cuMemsetD2D8 = memset_d2d8;
  t->cuMemsetD2D16 = memset_d2d16;
  t->cuMemsetD2D32 = memset_d2d32;
  t->cuMemsetD2D8Async = memset_d2d8_async;
  t->cuMemsetD2D16Async = memset_d2d16_async;
  t->cuMemsetD2D32Async = memset_d2d32_async;
  t->cuMemcpyHtoD = memcpy_htod;
  t->cuMemcpyDtoH = memcpy_dtoh;
  t->cuFuncSetAttribute = func_set_attribute;
  t->cuDeviceGetUuid = device_get_uuid;
  t->cuModuleGetGlobal = module_get_global;
  return t;
}

FakeEnv::~FakeEnv() {
  while (!handles_.empty()) remove(handles_.begin()->second.kind, handles_.begin()->first);
}

bool FakeEnv::device_range(uint64_t ptr, uint64_t size) const {
  for (const auto& [base, length] : memory_) {
    if (ptr >= base && ptr - base < length && size <= length - (ptr - base)) return true;
  }
  return false;
}

void* FakeEnv::find(HandleKind kind, uint64_t handle) const {
  auto it = handles_.find(handle);
  return it != handles_.end() && it->second.kind == kind ? it->second.object : nullptr;
}

bool FakeEnv::stream(uint64_t handle, CUstream* out) const {
  if (protocol::is_special_stream(handle)) {
    *out = handle == protocol::kNullStream     ? nullptr
           : handle == protocol::kLegacyStream ? CU_STREAM_LEGACY
                                               : CU_STREAM_PER_THREAD;
    return true;
  }
  void* s = find(HandleKind::kStream, handle);
  *out = static_cast<CUstream>(s);
  return s != nullptr;
}

uint64_t FakeEnv::parent(HandleKind kind, uint64_t handle) const {
  auto it = handles_.find(handle);
  return it != handles_.end() && it->second.kind == kind ? it->second.parent : 0;
}

bool FakeEnv::add(HandleKind kind, uint64_t handle, void* object, uint64_t parent,
                  std::function<void(void*)> destroy) {
  if (!protocol::is_minted(handle) || protocol::kind_of(handle) != kind || handles_.count(handle)) return false;
  handles_[handle] = Entry{kind, object, std::move(destroy), parent != 0 ? parent : context()};
  return true;
}

bool FakeEnv::remove(HandleKind kind, uint64_t handle) {
  auto it = handles_.find(handle);
  if (it == handles_.end() || it->second.kind != kind) return false;
  Entry e = std::move(it->second);
  handles_.erase(it);
  if (e.destroy) e.destroy(e.object);
  return true;
}

namespace {

constexpr uintptr_t kArenaBase = 0x5a0000000000;  // above ASan's shadow, below the stack
constexpr size_t kSlots = 16;

// Each slot: kMaxAllocation bytes of memory, then one page with no access.
size_t slot_bytes() { return FakeEnv::kMaxAllocation + static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

unsigned char* arena() {
  static unsigned char* base = [] {
    void* p = mmap(reinterpret_cast<void*>(kArenaBase), kSlots * slot_bytes(), PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) std::abort();  // a test double that cannot stand up
    return static_cast<unsigned char*>(p);
  }();
  return base;
}

size_t& next_slot() {
  static size_t next = 0;
  return next;
}

}  // namespace

uint64_t FakeEnv::allocate(size_t size) {
  if (memory_.empty()) next_slot() = 0;
  if (size == 0 || size > kMaxAllocation || next_slot() == kSlots) std::abort();
  unsigned char* slot = arena() + next_slot()++ * slot_bytes();
  mprotect(slot, kMaxAllocation, PROT_READ | PROT_WRITE);
  std::memset(slot, 0, kMaxAllocation);
  uint64_t base = reinterpret_cast<uint64_t>(slot + kMaxAllocation - size);
  memory_.emplace_back(base, size);
  return base;
}

void FakeEnv::put(HandleKind kind, uint64_t handle, void* object) {
  handles_[handle] = Entry{kind, object, nullptr, context()};
}

std::vector<ValidCall> valid_calls(FakeEnv& env) {
  namespace d = apigen::driver;
  namespace t = apigen::test;
  const uint64_t mem = env.allocate(256);
  const uint64_t function = make_handle(HandleKind::kFunction, 0x300);
  const uint64_t module = make_handle(HandleKind::kModule, 0x301);
  env.put(HandleKind::kFunction, function, reinterpret_cast<void*>(uintptr_t{0xF0}));
  env.put(HandleKind::kModule, module, reinterpret_cast<void*>(uintptr_t{0xA0}));
  std::vector<ValidCall> calls;
  auto add = [&](const DispatchRow* row, protocol::ArgWriter& w) { calls.push_back({row, w.take()}); };
  size_t sz = 0;
  int i = 0;
  CUdeviceptr p = 0;
  const char* s = nullptr;
  unsigned char bytes[16] = {1, 2, 3};
  CUuuid uuid;
  std::string_view sv;
  {
    protocol::ArgWriter w;
    d::pack_cuMemGetInfo_v2(w, &sz, &sz);
    add(find_driver_row(d::k_cuMemGetInfo_v2), w);
  }
  {
    protocol::ArgWriter w;
    d::pack_cuMemGetAddressRange_v2(w, &p, &sz, mem + 8);
    add(find_driver_row(d::k_cuMemGetAddressRange_v2), w);
  }
  {
    // 2-D memsets: 4 rows of 8 elements, 64 bytes apart, inside the 256.
    protocol::ArgWriter m8, m16, m32, a8, a16, a32;
    d::pack_cuMemsetD2D8_v2(m8, mem, 64, 7, 8, 4);
    add(find_driver_row(d::k_cuMemsetD2D8_v2), m8);
    d::pack_cuMemsetD2D16_v2(m16, mem, 64, 7, 8, 4);
    add(find_driver_row(d::k_cuMemsetD2D16_v2), m16);
    d::pack_cuMemsetD2D32_v2(m32, mem, 64, 7, 8, 4);
    add(find_driver_row(d::k_cuMemsetD2D32_v2), m32);
    d::pack_cuMemsetD2D8Async(a8, mem, 64, 7, 8, 4, protocol::kLegacyStream);
    add(find_driver_row(d::k_cuMemsetD2D8Async), a8);
    d::pack_cuMemsetD2D16Async(a16, mem, 64, 7, 8, 4, protocol::kNullStream);
    add(find_driver_row(d::k_cuMemsetD2D16Async), a16);
    d::pack_cuMemsetD2D32Async(a32, mem, 64, 7, 8, 4, protocol::kPerThreadStream);
    add(find_driver_row(d::k_cuMemsetD2D32Async), a32);
  }
  {
    protocol::ArgWriter w;
    d::pack_cuCtxGetStreamPriorityRange(w, &i, nullptr);
    add(find_driver_row(d::k_cuCtxGetStreamPriorityRange), w);
  }
  {
    protocol::ArgWriter w;
    d::pack_cuFuncGetName(w, &sv, function);
    add(find_driver_row(d::k_cuFuncGetName), w);
  }
  {
    // The driver's event calls: one made by the call, one already held.
    const uint64_t held = make_handle(HandleKind::kEvent, 0x401);
    const uint64_t made = make_handle(HandleKind::kEvent, 0x402);
    env.put(HandleKind::kEvent, held, reinterpret_cast<void*>(uintptr_t{0xE1}));
    float ms = 0;
    protocol::ArgWriter c, r, rf, q, e, x;
    d::pack_cuEventCreate(c, made, CU_EVENT_DISABLE_TIMING);
    add(find_driver_row(d::k_cuEventCreate), c);
    d::pack_cuEventRecord(r, held, protocol::kLegacyStream);
    add(find_driver_row(d::k_cuEventRecord), r);
    d::pack_cuEventRecordWithFlags(rf, held, protocol::kNullStream, CU_EVENT_RECORD_EXTERNAL);
    add(find_driver_row(d::k_cuEventRecordWithFlags), rf);
    d::pack_cuEventQuery(q, held);
    add(find_driver_row(d::k_cuEventQuery), q);
    d::pack_cuEventElapsedTime_v2(e, &ms, held, held);
    add(find_driver_row(d::k_cuEventElapsedTime_v2), e);
    d::pack_cuEventDestroy_v2(x, made);
    add(find_driver_row(d::k_cuEventDestroy_v2), x);
    // The old names, served by the newer ones.
    const uint64_t old_made = make_handle(HandleKind::kEvent, 0x405);
    protocol::ArgWriter oc, oe, ox;
    d::pack_cuEventCreate(oc, old_made, 0);
    add(find_driver_row(d::k_cuEventCreate), oc);
    d::pack_cuEventElapsedTime(oe, &ms, held, held);
    add(find_driver_row(d::k_cuEventElapsedTime), oe);
    d::pack_cuEventDestroy(ox, old_made);
    add(find_driver_row(d::k_cuEventDestroy), ox);
  }
  {
    // Calls of no handle, or of a stream's attributes.
    unsigned flags = 0, gpu = 0, memory = 0;
    CUstreamAttrValue value{};
    value.priority = -1;
    protocol::ArgWriter f, sa, ga, l2, p0, p1, u;
    d::pack_cuCtxGetFlags(f, &flags);
    add(find_driver_row(d::k_cuCtxGetFlags), f);
    d::pack_cuStreamSetAttribute(sa, protocol::kLegacyStream, CU_LAUNCH_ATTRIBUTE_PRIORITY, &value);
    add(find_driver_row(d::k_cuStreamSetAttribute), sa);
    d::pack_cuStreamGetAttribute(ga, protocol::kNullStream, CU_LAUNCH_ATTRIBUTE_PRIORITY, &value);
    add(find_driver_row(d::k_cuStreamGetAttribute), ga);
    d::pack_cuCtxResetPersistingL2Cache(l2);
    add(find_driver_row(d::k_cuCtxResetPersistingL2Cache), l2);
    d::pack_cuProfilerStart(p0);
    add(find_driver_row(d::k_cuProfilerStart), p0);
    d::pack_cuProfilerStop(p1);
    add(find_driver_row(d::k_cuProfilerStop), p1);
    d::pack_rgpuDeviceGetUtilization(u, &gpu, &memory, 0);
    add(find_driver_row(d::k_rgpuDeviceGetUtilization), u);
  }
  {
    // The driver's stream calls.
    const uint64_t made = make_handle(HandleKind::kStream, 0x403);
    const uint64_t other = make_handle(HandleKind::kStream, 0x404);
    unsigned flags = 0;
    int priority = 0;
    protocol::ArgWriter c, cp, q, f, pr, x, xo;
    d::pack_cuStreamCreate(c, made, CU_STREAM_NON_BLOCKING);
    add(find_driver_row(d::k_cuStreamCreate), c);
    d::pack_cuStreamCreateWithPriority(cp, other, 0, -1);
    add(find_driver_row(d::k_cuStreamCreateWithPriority), cp);
    d::pack_cuStreamQuery(q, made);
    add(find_driver_row(d::k_cuStreamQuery), q);
    d::pack_cuStreamGetFlags(f, made, &flags);
    add(find_driver_row(d::k_cuStreamGetFlags), f);
    d::pack_cuStreamGetPriority(pr, protocol::kPerThreadStream, &priority);
    add(find_driver_row(d::k_cuStreamGetPriority), pr);
    d::pack_cuStreamDestroy_v2(x, made);
    add(find_driver_row(d::k_cuStreamDestroy_v2), x);
    d::pack_cuStreamDestroy(xo, other);
    add(find_driver_row(d::k_cuStreamDestroy), xo);
  }
  {
    protocol::ArgWriter w;
    t::pack_cuEventCreate(w, make_handle(HandleKind::kEvent, 0x400), 2);
    add(find_test_row(t::k_cuEventCreate), w);
  }
  {
    protocol::ArgWriter w;
    t::pack_cuEventDestroy_v2(w, make_handle(HandleKind::kEvent, 0x400));
    add(find_test_row(t::k_cuEventDestroy_v2), w);
  }
  {
    protocol::ArgWriter w;
    t::pack_cuStreamQuery(w, protocol::kLegacyStream);
    add(find_test_row(t::k_cuStreamQuery), w);
  }
  {
    protocol::ArgWriter w;
    t::pack_cuMemsetD8_v2(w, mem, 7, 256);
    add(find_test_row(t::k_cuMemsetD8_v2), w);
  }
  {
    protocol::ArgWriter w;
    t::pack_cuMemcpyHtoD_v2(w, mem + 16, bytes, sizeof bytes);
    add(find_test_row(t::k_cuMemcpyHtoD_v2), w);
  }
  {
    protocol::ArgWriter w;
    t::pack_cuMemcpyDtoH_v2(w, bytes, mem, sizeof bytes);
    add(find_test_row(t::k_cuMemcpyDtoH_v2), w);
  }
  {
    protocol::ArgWriter w;
    t::pack_cuFuncSetAttribute(w, function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 4096);
    add(find_test_row(t::k_cuFuncSetAttribute), w);
  }
  {
    protocol::ArgWriter w;
    t::pack_cuDeviceGetUuid_v2(w, &uuid, 3);
    add(find_test_row(t::k_cuDeviceGetUuid_v2), w);
  }
  {
    protocol::ArgWriter w;
    s = "counter";
    t::pack_cuModuleGetGlobal_v2(w, &p, nullptr, module, s);
    add(find_test_row(t::k_cuModuleGetGlobal_v2), w);
  }
  // cuBLASLt (its table is absent here: the rows decode and check, then
  // answer "not supported"): a 4x4 matmul with a bias, and its heuristic.
  {
    namespace lt = protocol::lt;
    namespace attr = protocol::lt::attr;
    const uint64_t handle = make_handle(static_cast<HandleKind>(17), 0x500);
    env.put(static_cast<HandleKind>(17), handle, reinterpret_cast<void*>(uintptr_t{0xB0}));
    lt::Desc op, m4, pref;
    op.kind = attr::kMatmul;
    m4.kind = attr::kLayout;
    pref.kind = attr::kPreference;
    const uint32_t epilogue = 6;  // CUBLASLT_EPILOGUE_RELU_BIAS
    const uint64_t bias = mem + 128, rows = 4;
    const int64_t ld = 4;
    lt::set_attr(op, attr::CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
    lt::set_attr(op, attr::CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    lt::set_attr(m4, attr::CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows);
    lt::set_attr(m4, attr::CUBLASLT_MATRIX_LAYOUT_COLS, &rows, sizeof rows);
    lt::set_attr(m4, attr::CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld);
    const float one = 1;
    protocol::ArgWriter w;
    apigen::cublasLt::pack_cublasLtMatmul(w, handle, &op, &one, 0, mem, &m4, mem, &m4, &one, 0, mem + 64, &m4,
                                          mem + 64, &m4, nullptr, 0, 0, protocol::kNullStream);
    add(find_library_row(wire::Api::CUBLAS_LT, apigen::cublasLt::k_cublasLtMatmul), w);
    cublasLtMatmulHeuristicResult_t results[1];
    protocol::ArgWriter h;
    apigen::cublasLt::pack_cublasLtMatmulAlgoGetHeuristic(h, handle, &op, &m4, &m4, &m4, &m4, &pref, 1, results, &i);
    add(find_library_row(wire::Api::CUBLAS_LT, apigen::cublasLt::k_cublasLtMatmulAlgoGetHeuristic), h);
  }
  {
    // cuSPARSE's SpMM (server/src/cusparse_rows.cpp): a 4 x 4 CSR matrix of
    // 4 entries times a 4 x 4 B into C, all in `mem`.
    namespace sw = protocol::cusparse;
    const uint64_t handle = make_handle(static_cast<HandleKind>(sw::kHandleKind), 0x600);
    env.put(static_cast<HandleKind>(sw::kHandleKind), handle, reinterpret_cast<void*>(uintptr_t{0xC0}));
    sw::SpMat a;
    a.format = sw::kFormatCsr;
    a.rows = a.cols = a.nnz = 4;
    a.rows_ptr = mem;
    a.cols_ptr = mem + 32;
    a.values = mem + 48;
    a.offsets_type = a.index_type = 2;  // CUSPARSE_INDEX_32I
    sw::DnMat b;
    b.rows = b.cols = b.ld = 4;
    b.values = mem + 64;
    sw::DnMat c = b;
    c.values = mem + 128;
    const float one = 1;
    protocol::ArgWriter w;
    w.u64(handle);
    w.scalar(int32_t{0});
    w.scalar(int32_t{0});
    w.scalar(int32_t{0});  // CUDA_R_32F
    w.scalar(int32_t{0});
    w.u64(sw::kPointerHost);
    w.buffer(&one, 4);
    sw::write(w, a);
    sw::write(w, b);
    w.u64(sw::kPointerHost);
    w.buffer(&one, 4);
    sw::write(w, c);
    w.u64(0);
    add(find_row(wire::Api::CUSPARSE, sw::kSpMM), w);
  }
  return calls;
}

}  // namespace rgpu::server::apigen_test
