// Session: Call.graph, stream capture, graphs and virtual memory management
// run through the driver table, every handle and address checked against the
// session's own (SessionGraphs), and client-side work in a capture as host
// steps of the graph (docs/compatibility.md).
#include "rgpu/common/log.h"
#include "rgpu/protocol/graph_ops.h"
#include "session.h"

namespace rgpu::server {

using protocol::GraphOp;

namespace {

// Dependencies reported by a capture query at most (the rest are cut off).
constexpr size_t kMaxReportedDependencies = 256;

}  // namespace

CUresult Session::refuse_if_capturing(CUstream s) {
  if (!cu_.cuStreamIsCapturing) return CUDA_SUCCESS;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (cu_.cuStreamIsCapturing(s, &status) != CUDA_SUCCESS || status == CU_STREAM_CAPTURE_STATUS_NONE) {
    return CUDA_SUCCESS;
  }
  // A query is illegal on a capturing stream: the driver invalidates the
  // capture, so that its end reports the refused call.
  (void)cu_.cuStreamQuery(s);
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

namespace {

// Called by the graph holding a host step when it lets the step go (the
// user object's destructor): marks it for the session to free. Touches only
// the flag, which it shares with the session's record.
void CUDA_CB release_host_step(void* flag) {
  auto* released = static_cast<std::shared_ptr<std::atomic<bool>>*>(flag);
  (*released)->store(true, std::memory_order_release);
  delete released;
}

}  // namespace

CUresult Session::capture_host_step(uint64_t ctx, CUstream s, uint64_t id, protocol::HostStepKind kind,
                                    uint64_t address, uint64_t size) {
  using protocol::HostStepKind;
  const bool copy = kind != HostStepKind::kRun;
  if ((id & protocol::kHostStepIdBit) == 0 || kind > HostStepKind::kCopyOut) return CUDA_ERROR_INVALID_VALUE;
  if (copy && (size == 0 || size > protocol::kMaxHostStepBytes)) return CUDA_ERROR_INVALID_VALUE;
  if (!copy && (address != 0 || size != 0)) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_range(ctx, address, size); r != CUDA_SUCCESS) return r;
  auto step = std::make_unique<HostFuncWait>();
  step->session = this;
  step->id = id;
  step->step = true;
  step->kind = kind;
  step->size = size;
  step->released = std::make_shared<std::atomic<bool>>(false);
  {
    std::lock_guard<std::mutex> lock(host_funcs_mu_);
    // Steps of graphs that are gone are freed here, on the session's thread.
    size_t live = 0;
    for (auto it = host_funcs_.begin(); it != host_funcs_.end();) {
      if (it->second->step && it->second->released->load(std::memory_order_acquire)) {
        it = host_funcs_.erase(it);
      } else {
        live += it->second->step ? 1 : 0;
        ++it;
      }
    }
    if (live >= limits_.max_session_waits) return CUDA_ERROR_OUT_OF_MEMORY;
    if (host_funcs_.count(id)) return CUDA_ERROR_INVALID_VALUE;
  }
  if (copy && !(step->buffer = staging(size))) return CUDA_ERROR_OUT_OF_MEMORY;
  HostFuncWait* raw = step.get();
  {
    std::lock_guard<std::mutex> lock(host_funcs_mu_);
    host_funcs_.emplace(id, std::move(step));
  }
  auto forget = [&](CUresult r) {
    std::lock_guard<std::mutex> lock(host_funcs_mu_);
    host_funcs_.erase(id);
    return r;
  };
  // The step and its copy, in the order of the direction of the bytes.
  CUresult r = CUDA_SUCCESS;
  if (kind == HostStepKind::kCopyOut) r = cu_.cuMemcpyDtoHAsync(raw->buffer.get(), address, size, s);
  if (r == CUDA_SUCCESS) r = cu_.cuLaunchHostFunc(s, &Session::host_func_trampoline, raw);
  if (r == CUDA_SUCCESS && kind == HostStepKind::kCopyIn) r = cu_.cuMemcpyHtoDAsync(address, raw->buffer.get(), size, s);
  if (r != CUDA_SUCCESS) {
    // Part of the step may be in the capture: end it unusable (a query is
    // illegal while capturing), so no graph refers to the freed buffer.
    (void)cu_.cuStreamQuery(s);
    return forget(r);
  }
  // The captured graph owns the step from here: a user object of the graph
  // tells the session when the graph (and every graph cloned or instantiated
  // from it) is gone. A driver without user objects keeps the step until
  // the session ends.
  CUgraph graph = nullptr;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (cu_.cuUserObjectCreate && cu_.cuGraphRetainUserObject &&
      cu_.cuStreamGetCaptureInfo(s, &status, nullptr, &graph, nullptr, nullptr, nullptr) == CUDA_SUCCESS && graph) {
    auto* flag = new std::shared_ptr<std::atomic<bool>>(raw->released);
    CUuserObject owner = nullptr;
    // Should the graph not take the object, it is kept (releasing it would
    // free a step the graph uses): the step then lives as long as the session.
    if (cu_.cuUserObjectCreate(&owner, flag, release_host_step, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC) != CUDA_SUCCESS) {
      delete flag;
    } else {
      (void)cu_.cuGraphRetainUserObject(graph, owner, 1, CU_GRAPH_USER_OBJECT_MOVE);
    }
  }
  return CUDA_SUCCESS;
}

void Session::sync_segments(uint64_t base) {
  auto res = graphs_.reservations.find(base);
  if (res == graphs_.reservations.end()) return;
  const uint64_t end = base + res->second.size;
  for (auto it = graphs_.segments.lower_bound(base); it != graphs_.segments.end() && it->first < end;) {
    ledger_.remove_allocation(it->second, it->first);
    it = graphs_.segments.erase(it);
  }
  uint64_t run = 0, run_size = 0, run_ctx = 0;
  auto flush = [&] {
    if (run_size && ledger_.add(run_ctx, run, run_size)) graphs_.segments[run] = run_ctx;
    run_size = 0;
  };
  for (auto it = graphs_.mappings.lower_bound(base); it != graphs_.mappings.end() && it->first < end; ++it) {
    const auto& m = it->second;
    if (!m.access) {
      flush();
      continue;
    }
    if (run_size && run + run_size == it->first && run_ctx == m.ctx) {
      run_size += m.size;
      continue;
    }
    flush();
    run = it->first;
    run_size = m.size;
    run_ctx = m.ctx;
  }
  flush();
}

CUresult Session::graph_call(uint64_t ctx, wire::Call::GraphCall::Reader in, std::vector<uint64_t>* values) {
  if (CUresult r = make_current(ctx); r != CUDA_SUCCESS) return r;
  auto args = in.getArgs();
  auto need = [&](unsigned n) { return args.size() == n; };
  auto arg = [&](unsigned i) -> uint64_t { return args[i]; };
  auto stream = [&](uint64_t handle, CUstream* s) { return lookup_stream(ctx, handle, s); };
  auto ours = [&](const std::map<uint64_t, uint64_t>& table, uint64_t h) {
    auto it = table.find(h);
    return it != table.end() && it->second == ctx;
  };
  // The client names the session's ordinal of its device; the driver is
  // given the server's ordinal of that device (slices.h).
  const uint32_t device = ledger_.device_of(ctx);
  const int physical = static_cast<int>(device < devices_.size() ? devices_[device].device : device);
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  switch (static_cast<GraphOp>(in.getOp())) {
    case GraphOp::kBeginCapture: {
      CUstream s;
      if (!need(2)) return CUDA_ERROR_INVALID_VALUE;
      if ((r = stream(arg(0), &s)) != CUDA_SUCCESS) return r;
      if (arg(1) > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
      if (!cu_.cuStreamBeginCapture) return CUDA_ERROR_NOT_SUPPORTED;
      // Relaxed on the server: its calls run on its own threads, which are
      // not the program's (see graph_api.cpp on the client).
      return cu_.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED);
    }
    case GraphOp::kEndCapture: {
      CUstream s;
      if (!need(1)) return CUDA_ERROR_INVALID_VALUE;
      if ((r = stream(arg(0), &s)) != CUDA_SUCCESS) return r;
      if (!cu_.cuStreamEndCapture) return CUDA_ERROR_NOT_SUPPORTED;
      CUgraph g = nullptr;
      if ((r = cu_.cuStreamEndCapture(s, &g)) != CUDA_SUCCESS) return r;
      graphs_.graphs[reinterpret_cast<uint64_t>(g)] = ctx;
      *values = {reinterpret_cast<uint64_t>(g)};
      return CUDA_SUCCESS;
    }
    case GraphOp::kCaptureInfo: {
      CUstream s;
      if (!need(1)) return CUDA_ERROR_INVALID_VALUE;
      if ((r = stream(arg(0), &s)) != CUDA_SUCCESS) return r;
      if (!cu_.cuStreamGetCaptureInfo) return CUDA_ERROR_NOT_SUPPORTED;
      CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
      cuuint64_t id = 0;
      CUgraph g = nullptr;
      const CUgraphNode* deps = nullptr;
      size_t n = 0;
      if ((r = cu_.cuStreamGetCaptureInfo(s, &status, &id, &g, &deps, nullptr, &n)) != CUDA_SUCCESS) return r;
      if (status == CU_STREAM_CAPTURE_STATUS_NONE) n = 0;
      if (n > kMaxReportedDependencies) n = kMaxReportedDependencies;
      *values = {static_cast<uint64_t>(status), id, reinterpret_cast<uint64_t>(g), n};
      for (size_t i = 0; i < n && deps; ++i) values->push_back(reinterpret_cast<uint64_t>(deps[i]));
      return CUDA_SUCCESS;
    }
    case GraphOp::kRefuseIfCapturing: {
      CUstream s;
      if (!need(1)) return CUDA_ERROR_INVALID_VALUE;
      if ((r = stream(arg(0), &s)) != CUDA_SUCCESS) return r;
      return refuse_if_capturing(s);
    }
    case GraphOp::kCaptureHostStep: {
      CUstream s;
      if (!need(5)) return CUDA_ERROR_INVALID_VALUE;
      if ((r = stream(arg(0), &s)) != CUDA_SUCCESS) return r;
      CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
      if (!cu_.cuStreamIsCapturing || cu_.cuStreamIsCapturing(s, &status) != CUDA_SUCCESS ||
          status == CU_STREAM_CAPTURE_STATUS_NONE) {
        *values = {0};
        return CUDA_SUCCESS;
      }
      if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
      r = capture_host_step(ctx, s, arg(1), static_cast<protocol::HostStepKind>(arg(2)), arg(3), arg(4));
      if (r == CUDA_SUCCESS) *values = {1};
      return r;
    }
    case GraphOp::kGraphCreate: {
      if (!need(0)) return CUDA_ERROR_INVALID_VALUE;
      if (!cu_.cuGraphCreate) return CUDA_ERROR_NOT_SUPPORTED;
      CUgraph g = nullptr;
      if ((r = cu_.cuGraphCreate(&g, 0)) != CUDA_SUCCESS) return r;
      graphs_.graphs[reinterpret_cast<uint64_t>(g)] = ctx;
      *values = {reinterpret_cast<uint64_t>(g)};
      return CUDA_SUCCESS;
    }
    case GraphOp::kGraphClone: {
      if (!need(1) || !ours(graphs_.graphs, arg(0))) return CUDA_ERROR_INVALID_VALUE;
      if (!cu_.cuGraphClone) return CUDA_ERROR_NOT_SUPPORTED;
      CUgraph g = nullptr;
      if ((r = cu_.cuGraphClone(&g, reinterpret_cast<CUgraph>(arg(0)))) != CUDA_SUCCESS) return r;
      graphs_.graphs[reinterpret_cast<uint64_t>(g)] = ctx;
      *values = {reinterpret_cast<uint64_t>(g)};
      return CUDA_SUCCESS;
    }
    case GraphOp::kGraphDestroy: {
      if (!need(1) || !ours(graphs_.graphs, arg(0))) return CUDA_ERROR_INVALID_VALUE;
      if (!cu_.cuGraphDestroy) return CUDA_ERROR_NOT_SUPPORTED;
      if ((r = cu_.cuGraphDestroy(reinterpret_cast<CUgraph>(arg(0)))) == CUDA_SUCCESS) graphs_.graphs.erase(arg(0));
      return r;
    }
    case GraphOp::kGraphNodeCount: {
      if (!need(1) || !ours(graphs_.graphs, arg(0))) return CUDA_ERROR_INVALID_VALUE;
      if (!cu_.cuGraphGetNodes) return CUDA_ERROR_NOT_SUPPORTED;
      size_t n = 0;
      if ((r = cu_.cuGraphGetNodes(reinterpret_cast<CUgraph>(arg(0)), nullptr, &n)) != CUDA_SUCCESS) return r;
      *values = {n};
      return CUDA_SUCCESS;
    }
    case GraphOp::kInstantiate: {
      if (!need(2) || !ours(graphs_.graphs, arg(0))) return CUDA_ERROR_INVALID_VALUE;
      if (!cu_.cuGraphInstantiateWithFlags) return CUDA_ERROR_NOT_SUPPORTED;
      CUgraphExec e = nullptr;
      if ((r = cu_.cuGraphInstantiateWithFlags(&e, reinterpret_cast<CUgraph>(arg(0)), arg(1))) != CUDA_SUCCESS) return r;
      graphs_.execs[reinterpret_cast<uint64_t>(e)] = ctx;
      *values = {reinterpret_cast<uint64_t>(e)};
      return CUDA_SUCCESS;
    }
    case GraphOp::kExecDestroy: {
      if (!need(1) || !ours(graphs_.execs, arg(0))) return CUDA_ERROR_INVALID_VALUE;
      if (!cu_.cuGraphExecDestroy) return CUDA_ERROR_NOT_SUPPORTED;
      if ((r = cu_.cuGraphExecDestroy(reinterpret_cast<CUgraphExec>(arg(0)))) == CUDA_SUCCESS) graphs_.execs.erase(arg(0));
      return r;
    }
    case GraphOp::kLaunch:
    case GraphOp::kUpload: {
      CUstream s;
      if (!need(2) || !ours(graphs_.execs, arg(0))) return CUDA_ERROR_INVALID_VALUE;
      if ((r = stream(arg(1), &s)) != CUDA_SUCCESS) return r;
      auto e = reinterpret_cast<CUgraphExec>(arg(0));
      if (static_cast<GraphOp>(in.getOp()) == GraphOp::kUpload) {
        return cu_.cuGraphUpload ? cu_.cuGraphUpload(e, s) : CUDA_ERROR_NOT_SUPPORTED;
      }
      return cu_.cuGraphLaunch ? cu_.cuGraphLaunch(e, s) : CUDA_ERROR_NOT_SUPPORTED;
    }
    case GraphOp::kMemGranularity: {
      if (!need(2) || arg(0) != device || arg(1) > CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) return CUDA_ERROR_INVALID_VALUE;
      if (!cu_.cuMemGetAllocationGranularity) return CUDA_ERROR_NOT_SUPPORTED;
      CUmemAllocationProp prop{};
      prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      prop.location.id = physical;
      size_t g = 0;
      r = cu_.cuMemGetAllocationGranularity(&g, &prop, static_cast<CUmemAllocationGranularity_flags>(arg(1)));
      if (r == CUDA_SUCCESS) *values = {g};
      return r;
    }
    case GraphOp::kMemCreate: {
      if (!need(2) || arg(0) != device || arg(1) == 0) return CUDA_ERROR_INVALID_VALUE;
      if (!cu_.cuMemCreate) return CUDA_ERROR_NOT_SUPPORTED;
      uint64_t size = arg(1);
      if (!fits(ctx, size)) {
        note_quota(ctx, size, "cuMemCreate");
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
      CUmemAllocationProp prop{};
      prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      prop.location.id = physical;
      CUmemGenericAllocationHandle h = 0;
      if ((r = cu_.cuMemCreate(&h, size, &prop, 0)) != CUDA_SUCCESS) return r;
      graphs_.chunks[h] = SessionGraphs::Chunk{ctx, size, 1, false};
      *values = {h};
      return CUDA_SUCCESS;
    }
    case GraphOp::kMemRelease: {
      if (!need(1)) return CUDA_ERROR_INVALID_VALUE;
      auto it = graphs_.chunks.find(arg(0));
      if (it == graphs_.chunks.end() || it->second.ctx != ctx || it->second.refs == 0) return CUDA_ERROR_INVALID_VALUE;
      if (!cu_.cuMemRelease) return CUDA_ERROR_NOT_SUPPORTED;
      if ((r = cu_.cuMemRelease(arg(0))) != CUDA_SUCCESS) return r;
      if (--it->second.refs == 0 && !it->second.mapped) graphs_.chunks.erase(it);
      return CUDA_SUCCESS;
    }
    case GraphOp::kAddressReserve: {
      if (!need(3) || arg(0) == 0) return CUDA_ERROR_INVALID_VALUE;
      if (!cu_.cuMemAddressReserve) return CUDA_ERROR_NOT_SUPPORTED;
      CUdeviceptr p = 0;
      if ((r = cu_.cuMemAddressReserve(&p, arg(0), arg(1), arg(2), 0)) != CUDA_SUCCESS) return r;
      graphs_.reservations[p] = SessionGraphs::Reservation{ctx, arg(0)};
      *values = {p};
      return CUDA_SUCCESS;
    }
    case GraphOp::kAddressFree: {
      if (!need(2)) return CUDA_ERROR_INVALID_VALUE;
      auto it = graphs_.reservations.find(arg(0));
      if (it == graphs_.reservations.end() || it->second.ctx != ctx || it->second.size != arg(1)) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      auto m = graphs_.mappings.lower_bound(arg(0));
      if (m != graphs_.mappings.end() && m->first < arg(0) + arg(1)) return CUDA_ERROR_INVALID_VALUE;
      if (!cu_.cuMemAddressFree) return CUDA_ERROR_NOT_SUPPORTED;
      if ((r = cu_.cuMemAddressFree(arg(0), arg(1))) == CUDA_SUCCESS) graphs_.reservations.erase(it);
      return r;
    }
    case GraphOp::kMemMap: {
      if (!need(3)) return CUDA_ERROR_INVALID_VALUE;
      const uint64_t addr = arg(0), size = arg(1);
      auto res = graphs_.reservation_of(addr, size);
      auto chunk = graphs_.chunks.find(arg(2));
      if (size == 0 || res == graphs_.reservations.end() || res->second.ctx != ctx || chunk == graphs_.chunks.end() ||
          chunk->second.ctx != ctx || chunk->second.refs == 0 || chunk->second.mapped || chunk->second.size != size) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      auto next = graphs_.mappings.lower_bound(addr);
      if (next != graphs_.mappings.end() && next->first < addr + size) return CUDA_ERROR_INVALID_VALUE;
      if (next != graphs_.mappings.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second.size > addr) return CUDA_ERROR_INVALID_VALUE;
      }
      if (!cu_.cuMemMap) return CUDA_ERROR_NOT_SUPPORTED;
      if ((r = cu_.cuMemMap(addr, size, 0, arg(2), 0)) != CUDA_SUCCESS) return r;
      graphs_.mappings[addr] = SessionGraphs::Mapping{ctx, size, arg(2), false};
      chunk->second.mapped = true;
      return CUDA_SUCCESS;
    }
    case GraphOp::kMemUnmap: {
      if (!need(2)) return CUDA_ERROR_INVALID_VALUE;
      const uint64_t addr = arg(0), size = arg(1);
      auto res = graphs_.reservation_of(addr, size);
      if (size == 0 || res == graphs_.reservations.end() || res->second.ctx != ctx) return CUDA_ERROR_INVALID_VALUE;
      // Whole mappings only, and at least one.
      auto first = graphs_.mappings.lower_bound(addr);
      if (first != graphs_.mappings.begin() && std::prev(first)->first + std::prev(first)->second.size > addr) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      auto last = first;
      for (; last != graphs_.mappings.end() && last->first < addr + size; ++last) {
        if (last->first + last->second.size > addr + size) return CUDA_ERROR_INVALID_VALUE;
      }
      if (first == last) return CUDA_ERROR_INVALID_VALUE;
      if (!cu_.cuMemUnmap) return CUDA_ERROR_NOT_SUPPORTED;
      if ((r = cu_.cuMemUnmap(addr, size)) != CUDA_SUCCESS) return r;
      for (auto it = first; it != last;) {
        auto c = graphs_.chunks.find(it->second.chunk);
        if (c != graphs_.chunks.end()) {
          c->second.mapped = false;
          if (c->second.refs == 0) graphs_.chunks.erase(c);
        }
        it = graphs_.mappings.erase(it);
      }
      sync_segments(res->first);
      return CUDA_SUCCESS;
    }
    case GraphOp::kMemSetAccess: {
      if (!need(4) || arg(2) != device) return CUDA_ERROR_INVALID_VALUE;
      const uint64_t addr = arg(0), size = arg(1);
      auto res = graphs_.reservation_of(addr, size);
      if (size == 0 || res == graphs_.reservations.end() || res->second.ctx != ctx) return CUDA_ERROR_INVALID_VALUE;
      if (arg(3) > CU_MEM_ACCESS_FLAGS_PROT_READWRITE) return CUDA_ERROR_INVALID_VALUE;
      // The range must be mapped throughout.
      uint64_t at = addr;
      for (auto it = graphs_.mappings.find(addr); it != graphs_.mappings.end() && it->first == at && at < addr + size; ++it) {
        at += it->second.size;
      }
      if (at < addr + size) return CUDA_ERROR_INVALID_VALUE;
      if (!cu_.cuMemSetAccess) return CUDA_ERROR_NOT_SUPPORTED;
      CUmemAccessDesc desc{};
      desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      desc.location.id = physical;
      desc.flags = static_cast<CUmemAccess_flags>(arg(3));
      if ((r = cu_.cuMemSetAccess(addr, size, &desc, 1)) != CUDA_SUCCESS) return r;
      for (auto it = graphs_.mappings.find(addr); it != graphs_.mappings.end() && it->first < addr + size; ++it) {
        it->second.access = arg(3) != CU_MEM_ACCESS_FLAGS_PROT_NONE;
      }
      sync_segments(res->first);
      return CUDA_SUCCESS;
    }
    case GraphOp::kMemRetain: {
      if (!need(1)) return CUDA_ERROR_INVALID_VALUE;
      auto it = graphs_.mappings.upper_bound(arg(0));
      if (it == graphs_.mappings.begin()) return CUDA_ERROR_INVALID_VALUE;
      --it;
      if (arg(0) - it->first >= it->second.size || it->second.ctx != ctx) return CUDA_ERROR_INVALID_VALUE;
      if (!cu_.cuMemRetainAllocationHandle) return CUDA_ERROR_NOT_SUPPORTED;
      CUmemGenericAllocationHandle h = 0;
      if ((r = cu_.cuMemRetainAllocationHandle(&h, reinterpret_cast<void*>(arg(0)))) != CUDA_SUCCESS) return r;
      auto c = graphs_.chunks.find(h);
      if (c == graphs_.chunks.end()) {
        cu_.cuMemRelease(h);
        return CUDA_ERROR_INVALID_VALUE;
      }
      ++c->second.refs;
      *values = {h};
      return CUDA_SUCCESS;
    }
    case GraphOp::kMemProperties: {
      if (!need(1)) return CUDA_ERROR_INVALID_VALUE;
      auto c = graphs_.chunks.find(arg(0));
      if (c == graphs_.chunks.end() || c->second.ctx != ctx || c->second.refs == 0) return CUDA_ERROR_INVALID_VALUE;
      if (!cu_.cuMemGetAllocationPropertiesFromHandle) return CUDA_ERROR_NOT_SUPPORTED;
      CUmemAllocationProp prop{};
      if ((r = cu_.cuMemGetAllocationPropertiesFromHandle(&prop, arg(0))) != CUDA_SUCCESS) return r;
      *values = {device};  // the chunk's context's device, as the session numbers it
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

void Session::release_graphs() {
  auto current = [this](uint64_t ctx) { return set_current(context_object(ctx)) == CUDA_SUCCESS; };
  for (auto& [e, ctx] : graphs_.execs) {
    if (current(ctx) && cu_.cuGraphExecDestroy) cu_.cuGraphExecDestroy(reinterpret_cast<CUgraphExec>(e));
  }
  for (auto& [g, ctx] : graphs_.graphs) {
    if (current(ctx) && cu_.cuGraphDestroy) cu_.cuGraphDestroy(reinterpret_cast<CUgraph>(g));
  }
  for (auto& [addr, m] : graphs_.mappings) {
    if (current(m.ctx) && cu_.cuMemUnmap) cu_.cuMemUnmap(addr, m.size);
  }
  for (auto& [h, c] : graphs_.chunks) {
    for (uint64_t i = 0; i < c.refs && current(c.ctx) && cu_.cuMemRelease; ++i) cu_.cuMemRelease(h);
  }
  for (auto& [addr, res] : graphs_.reservations) {
    if (current(res.ctx) && cu_.cuMemAddressFree) cu_.cuMemAddressFree(addr, res.size);
  }
  for (auto& [base, ctx] : graphs_.segments) ledger_.remove_allocation(ctx, base);
  graphs_ = SessionGraphs{};
}

}  // namespace rgpu::server
