// rgpud's scrape-time families: devices, slices and sessions.
#include "server_collectors.h"

#include <map>
#include <string>

namespace rgpu::server {
namespace {

using metrics::Sink;
using metrics::Type;

std::string slice_label(int slice) { return slice < 0 ? "whole" : std::to_string(slice); }

// Client-chosen text (program, host) bounded before it becomes a label.
std::string bounded(const std::string& text) { return text.size() <= 64 ? text : text.substr(0, 64); }

// Bytes held on each slot, summed over the sessions placed there.
std::map<std::pair<uint32_t, int>, uint64_t> held_by_slot(const ServerView& v) {
  std::map<std::pair<uint32_t, int>, uint64_t> held;
  for (const auto& s : v.sessions) {
    const auto& places = s->placements();
    for (size_t i = 0; i < places.size(); ++i) {
      held[{places[i].device, places[i].slice}] += s->memory_held(static_cast<uint32_t>(i));
    }
  }
  return held;
}

}  // namespace

std::vector<metrics::Collection> collect_server(metrics::Registry& r, std::shared_ptr<const ServerInfo> info,
                                                std::shared_ptr<const DriverTable> driver,
                                                std::function<ServerView()> view) {
  std::vector<metrics::Collection> out;
  auto devices = [info](auto&& fn) {
    for (size_t i = 0; i < info->devices.size(); ++i) fn(i, info->devices[i]);
  };
  out.push_back(r.collect("rgpu_device_info", "The server's devices (value 1): name and kind (cpu or cuda).",
                          Type::kGauge, {"device", "name", "kind"}, [info, devices](Sink& s) {
                            devices([&](size_t i, const ServerInfo::Device& d) {
                              s.add({std::to_string(i), d.name, d.ptx_only ? "cpu" : "cuda"}, 1);
                            });
                          }));
  out.push_back(r.collect("rgpu_device_memory_total_bytes", "Device memory.", Type::kGauge, {"device"},
                          [devices](Sink& s) {
                            devices([&](size_t i, const ServerInfo::Device& d) {
                              s.add({std::to_string(i)}, static_cast<double>(d.total_mem));
                            });
                          }));
  out.push_back(r.collect(
      "rgpu_device_memory_used_bytes",
      "Device memory the sessions hold (allocations and module images, by rgpud's ledger).", Type::kGauge,
      {"device"}, [info, view](Sink& s) {
        std::vector<uint64_t> used(info->devices.size(), 0);
        for (const auto& [slot, bytes] : held_by_slot(view())) {
          if (slot.first < used.size()) used[slot.first] += bytes;
        }
        for (size_t i = 0; i < used.size(); ++i) s.add({std::to_string(i)}, static_cast<double>(used[i]));
      }));
  // Utilization as NVML measures it (the CPU device measures the same way).
  auto utilization = [info, driver](Sink& s, bool memory) {
    if (!driver->rgpuDeviceGetUtilization) return;
    for (size_t i = 0; i < info->devices.size(); ++i) {
      CUdevice dev;
      unsigned gpu = 0, mem = 0;
      if (driver->cuDeviceGet(&dev, static_cast<int>(i)) != CUDA_SUCCESS ||
          driver->rgpuDeviceGetUtilization(&gpu, &mem, dev) != CUDA_SUCCESS) {
        continue;
      }
      s.add({std::to_string(i)}, (memory ? mem : gpu) / 100.0);
    }
  };
  out.push_back(r.collect("rgpu_device_utilization_ratio",
                          "Share of the last second during which a kernel ran on the device (0 to 1).",
                          Type::kGauge, {"device"}, [utilization](Sink& s) { utilization(s, false); }));
  out.push_back(r.collect("rgpu_device_memory_utilization_ratio",
                          "Share of the last second during which the device's memory was read or written by "
                          "copies (0 to 1).",
                          Type::kGauge, {"device"}, [utilization](Sink& s) { utilization(s, true); }));

  // Slices: a device without cuts is one slice, "whole".
  auto slices = [view](Sink& s, auto value) {
    const ServerView v = view();
    const auto held = held_by_slot(v);
    for (const auto& slot : v.slots) {
      auto it = held.find({slot.device, slot.index});
      s.add({std::to_string(slot.device), slice_label(slot.index)}, value(slot, it == held.end() ? 0 : it->second));
    }
  };
  using Slot = SliceTable::Slot;
  out.push_back(r.collect("rgpu_slice_memory_quota_bytes", "Memory of each slice (a whole device's: its memory).",
                          Type::kGauge, {"device", "slice"}, [slices](Sink& s) {
                            slices(s, [](const Slot& slot, uint64_t) { return static_cast<double>(slot.memory); });
                          }));
  out.push_back(r.collect("rgpu_slice_memory_used_bytes", "Memory the sessions on each slice hold.", Type::kGauge,
                          {"device", "slice"}, [slices](Sink& s) {
                            slices(s, [](const Slot&, uint64_t used) { return static_cast<double>(used); });
                          }));
  out.push_back(r.collect("rgpu_slice_share", "Each slice's share of its device's compute (0 to 1).", Type::kGauge,
                          {"device", "slice"}, [slices](Sink& s) {
                            slices(s, [](const Slot& slot, uint64_t) { return static_cast<double>(slot.share); });
                          }));
  out.push_back(r.collect("rgpu_slice_sessions", "Sessions holding each slice now.", Type::kGauge,
                          {"device", "slice"}, [slices](Sink& s) {
                            slices(s, [](const Slot& slot, uint64_t) { return static_cast<double>(slot.sessions); });
                          }));

  // Sessions: counts by tenant, and series of their own for the first few.
  out.push_back(r.collect("rgpu_sessions", "Sessions open now, by tenant.", Type::kGauge, {"tenant"},
                          [view](Sink& s) {
                            std::map<std::string, size_t> by_tenant;
                            for (const auto& session : view().sessions) ++by_tenant[session->client().tenant];
                            for (const auto& [tenant, n] : by_tenant) s.add({tenant}, static_cast<double>(n));
                          }));
  out.push_back(r.collect("rgpu_sessions_unlisted",
                          "Sessions open now without rgpu_session_* series (past the first 64).", Type::kGauge, {},
                          [view](Sink& s) {
                            const size_t n = view().sessions.size();
                            s.add({}, static_cast<double>(n > kMaxSessionSeries ? n - kMaxSessionSeries : 0));
                          }));
  auto each_session = [view](auto&& fn) {
    const ServerView v = view();
    for (size_t i = 0; i < v.sessions.size() && i < kMaxSessionSeries; ++i) fn(*v.sessions[i]);
  };
  out.push_back(r.collect(
      "rgpu_session_info", "Open sessions (value 1): tenant, program, host, pid and devices (DEVICE[.SLICE],...).",
      Type::kGauge, {"session", "tenant", "program", "host", "pid", "devices"}, [each_session](Sink& s) {
        each_session([&](const Session& session) {
          std::string devices;
          for (const Placement& p : session.placements()) {
            devices += (devices.empty() ? "" : ",") + std::to_string(p.device);
            if (p.slice >= 0) devices += "." + std::to_string(p.slice);
          }
          const ClientIdentity& c = session.client();
          s.add({std::to_string(session.id()), c.tenant, bounded(c.program), bounded(c.hostname),
                 std::to_string(c.pid), devices},
                1);
        });
      }));
  out.push_back(r.collect("rgpu_session_calls_total", "Calls the session made.", Type::kCounter, {"session"},
                          [each_session](Sink& s) {
                            each_session([&](const Session& session) {
                              s.add({std::to_string(session.id())}, static_cast<double>(session.metrics().calls()));
                            });
                          }));
  out.push_back(r.collect("rgpu_session_copy_bytes_total", "Bytes the session copied, by direction.",
                          Type::kCounter, {"session", "direction"}, [each_session](Sink& s) {
                            each_session([&](const Session& session) {
                              const std::string id = std::to_string(session.id());
                              s.add({id, "host_to_device"}, static_cast<double>(session.metrics().bytes_to_device()));
                              s.add({id, "device_to_host"}, static_cast<double>(session.metrics().bytes_to_host()));
                            });
                          }));
  out.push_back(r.collect("rgpu_session_memory_used_bytes", "Device memory the session holds, all devices.",
                          Type::kGauge, {"session"}, [each_session](Sink& s) {
                            each_session([&](const Session& session) {
                              s.add({std::to_string(session.id())}, static_cast<double>(session.memory_held()));
                            });
                          }));
  return out;
}

}  // namespace rgpu::server
