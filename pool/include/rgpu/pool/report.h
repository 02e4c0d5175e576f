// The usage report (`rgpu pool report --since 24h`): from a history and a
// window, GPU-hours leased against GPU-hours busy per tenant and per device,
// queue waits, and the pool's use over time; written as JSON and as a
// self-contained HTML page with inline SVG plots. The definitions and the
// JSON schema are in docs/pool.md ("Usage report").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rgpu/common/status.h"
#include "rgpu/pool/history.h"

namespace rgpu::pool {

// "90m", "24h", "7d", "30s", or a sum such as "1d12h"; at most 366 days.
Result<Millis> parse_duration(std::string_view text);

struct ReportOptions {
  Millis since_ms = 24 * 3'600'000;  // the window's length
  // The window's end; 0: the time of the history's last event.
  Millis end = 0;
  // Width of the over-time buckets; 0: the window / 48, rounded up to a
  // whole minute.
  Millis bucket_ms = 0;
  // A utilization sample covers at most this much time before it, however
  // long its span says: a server silent for longer is not measured then.
  Millis max_sample_span_ms = 10 * 60'000;
};

struct WaitStats {
  size_t count = 0;
  double p50_s = 0, p95_s = 0, max_s = 0;
};

struct TenantReport {
  std::string tenant;
  size_t leases = 0;  // leases that overlap the window
  double gpu_hours_leased = 0;
  double gpu_hours_busy = 0;
  double gpu_hours_unmeasured = 0;  // leased time no utilization sample covers
  WaitStats wait;                    // of the grants inside the window
  size_t gave_up = 0;                // requests that timed out or were cancelled
  std::map<std::string, size_t> ended;  // leases ended in the window, by reason
};

struct DeviceReport {
  std::string server;
  uint32_t device = 0;
  std::string kind;           // empty when the server's registration is not in the history
  double hours_measured = 0;  // time covered by utilization samples
  double gpu_hours_leased = 0;
  double gpu_hours_busy = 0;         // the device's whole busy time
  double gpu_hours_busy_leased = 0;  // of which while leased
};

struct Bucket {
  Millis start = 0;
  double measured_gpus = 0;  // mean devices reporting utilization
  double leased_gpus = 0;    // mean device-equivalents leased
  double busy_gpus = 0;      // mean device-equivalents busy
  double queued = 0;         // mean queue length
  std::map<std::string, double> leased_by_tenant;
};

struct Report {
  Millis from = 0, to = 0, bucket_ms = 0;
  size_t events = 0;         // events read
  size_t skipped_lines = 0;  // set by the caller from HistoryRead
  size_t unmatched_ends = 0; // lease ends whose grant is not in the history
  TenantReport total;        // every tenant together (tenant "*")
  std::vector<TenantReport> tenants;  // by name
  std::vector<DeviceReport> devices;  // by server, then device
  std::vector<Bucket> buckets;
};

// Computes the report of `events` (in time order, as recorded). Errors only
// for bad options (an empty window); odd events (an end without a grant, a
// sample of an unknown device) are counted or used as far as they go.
Result<Report> make_report(const std::vector<HistoryEvent>& events, const ReportOptions& options);

// The report as JSON (schema in docs/pool.md), pretty-printed.
std::string report_json(const Report& report);
// The report as one HTML page: tables and inline SVG plots, no scripts, no
// links outside the page.
std::string report_html(const Report& report);

}  // namespace rgpu::pool
