// PTX's special registers by name (decode.h): those the CPU device gives a
// value, and those it reads as zero.
#include <string>

#include "decode.h"

namespace rgpu::ptx {
namespace {

struct SpecialName {
  const char* name;
  Special id;
};
const SpecialName kSpecials[] = {
    {"%tid.x", kTidX},       {"%tid.y", kTidY},         {"%tid.z", kTidZ},
    {"%ntid.x", kNtidX},     {"%ntid.y", kNtidY},       {"%ntid.z", kNtidZ},
    {"%ctaid.x", kCtaidX},   {"%ctaid.y", kCtaidY},     {"%ctaid.z", kCtaidZ},
    {"%nctaid.x", kNctaidX}, {"%nctaid.y", kNctaidY},   {"%nctaid.z", kNctaidZ},
    {"%laneid", kLaneId},    {"%warpid", kWarpId},      {"%nwarpid", kNWarpId},
    {"%lanemask_eq", kLanemaskEq}, {"%lanemask_le", kLanemaskLe}, {"%lanemask_lt", kLanemaskLt},
    {"%lanemask_ge", kLanemaskGe}, {"%lanemask_gt", kLanemaskGt}, {"%smid", kSmId},
    {"%nsmid", kNSmId},      {"%gridid", kGridId},
    {"%dynamic_smem_size", kDynamicSmem}, {"%total_smem_size", kTotalSmem}, {"%aggr_smem_size", kAggrSmem},
    {"%reserved_smem_offset_begin", kReservedBegin}, {"%reserved_smem_offset_end", kReservedEnd},
    {"%reserved_smem_offset_cap", kReservedCap}, {"%reserved_smem_offset_0", kReserved0},
    {"%reserved_smem_offset_1", kReserved1},
    // Launches have no clusters here: every block is a cluster of one, so
    // the cluster grid is the block grid.
    {"%clusterid.x", kCtaidX}, {"%clusterid.y", kCtaidY}, {"%clusterid.z", kCtaidZ},
    {"%nclusterid.x", kNctaidX}, {"%nclusterid.y", kNctaidY}, {"%nclusterid.z", kNctaidZ},
    {"%cluster_ctaid.x", kZero}, {"%cluster_ctaid.y", kZero}, {"%cluster_ctaid.z", kZero},
    {"%cluster_nctaid.x", kOne}, {"%cluster_nctaid.y", kOne}, {"%cluster_nctaid.z", kOne},
    {"%cluster_ctarank", kZero}, {"%cluster_nctarank", kOne}, {"%is_explicit_cluster", kZero},
    // Not part of a device graph; no cooperative-launch workspace.
    {"%current_graph_exec", kZero},
};

// %envreg0..31 (driver-defined, zero here: cooperative groups reads a zero
// grid workspace as "not a cooperative launch") and the performance
// counters %pm0..7, %pm0_64..%pm7_64 (no counters: zero).
bool zero_special(const std::string& n) {
  auto num = [&](size_t from, size_t to, int max) {
    if (to <= from || to - from > 2) return false;
    int v = 0;
    for (size_t i = from; i < to; ++i) {
      if (n[i] < '0' || n[i] > '9') return false;
      v = v * 10 + (n[i] - '0');
    }
    return (to - from == 1 || n[from] != '0') && v <= max;
  };
  if (n.rfind("%envreg", 0) == 0) return num(7, n.size(), 31);
  if (n.rfind("%pm", 0) == 0) {
    size_t end = n.size();
    if (end > 6 && n.compare(end - 3, 3, "_64") == 0) end -= 3;
    return end == 4 && num(3, 4, 7);
  }
  return false;
}

}  // namespace

bool special_register(const std::string& name, Special* id) {
  for (const auto& sp : kSpecials) {
    if (name == sp.name) {
      *id = sp.id;
      return true;
    }
  }
  if (zero_special(name)) {
    *id = kZero;
    return true;
  }
  return false;
}

}  // namespace rgpu::ptx
