// The usage report written out: JSON (schema in docs/pool.md) and one HTML
// page whose plots are inline SVG, so it opens anywhere, offline, with
// nothing loaded from outside it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "rgpu/pool/report.h"

namespace rgpu::pool {
namespace {

// Keys in the order the schema lists them (docs/pool.md), for people reading it.
using json = nlohmann::ordered_json;

// Four decimals are plenty for hours and ratios, and keep the JSON legible.
double r4(double v) { return std::round(v * 1e4) / 1e4; }

double ratio(double busy, double leased) { return leased > 0 ? busy / leased : 0.0; }

json tenant_json(const TenantReport& t) {
  return json{{"tenant", t.tenant},
              {"leases", t.leases},
              {"gpu_hours_leased", r4(t.gpu_hours_leased)},
              {"gpu_hours_busy", r4(t.gpu_hours_busy)},
              {"busy_ratio", r4(ratio(t.gpu_hours_busy, t.gpu_hours_leased))},
              {"gpu_hours_unmeasured", r4(t.gpu_hours_unmeasured)},
              {"queue_wait_s", {{"count", t.wait.count}, {"p50", r4(t.wait.p50_s)}, {"p95", r4(t.wait.p95_s)},
                                {"max", r4(t.wait.max_s)}}},
              {"gave_up", t.gave_up},
              {"ended", t.ended}};
}

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string num(double v, int decimals = 2) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

std::string when(Millis t) {
  const time_t s = static_cast<time_t>(t / 1000);
  struct tm tm {};
  gmtime_r(&s, &tm);
  char b[64];
  std::strftime(b, sizeof b, "%Y-%m-%d %H:%M", &tm);
  return b;
}

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
const char* color(size_t i) { return kColors[i % (sizeof kColors / sizeof *kColors)]; }

struct Series {
  std::string name;
  std::string color;
  std::vector<double> values;  // one per bucket
};

// Four round steps (a power of ten times 1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8)
// reaching a little above `v`, so the axis reads easily and a line at the
// maximum is not hidden under the frame.
double nice_top(double v) {
  if (!(v > 0)) return 1.0;
  const double step = v * 1.02 / 4.0;
  const double p = std::pow(10.0, std::floor(std::log10(step)));
  for (double m : {1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0}) {
    if (m * p >= step * (1 - 1e-9)) return 4.0 * m * p;
  }
  return 40.0 * p;
}

constexpr int kW = 760, kH = 260, kLeft = 56, kRight = 150, kTop = 28, kBottom = 36;

// A line plot over the report's buckets. Each series is one polyline with
// data-series naming it, so what the page shows can be checked.
std::string line_plot(const Report& r, const std::string& id, const std::string& title, const std::string& unit,
                      const std::vector<Series>& series) {
  double top = 0;
  for (const Series& s : series) {
    for (double v : s.values) top = std::max(top, v);
  }
  top = nice_top(top);
  const size_t n = r.buckets.size();
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto x = [&](size_t i) { return kLeft + (n > 1 ? pw * static_cast<double>(i) / static_cast<double>(n - 1) : 0); };
  auto y = [&](double v) { return kTop + ph * (1.0 - v / top); };
  std::string o = "<svg id=\"" + id + "\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                  std::to_string(kW) + "\" height=\"" + std::to_string(kH) + "\" viewBox=\"0 0 " + std::to_string(kW) +
                  " " + std::to_string(kH) + "\" role=\"img\">\n<title>" + esc(title) + "</title>\n";
  o += "<text x=\"" + std::to_string(kLeft) + "\" y=\"16\" class=\"ptitle\">" + esc(title) + "</text>\n";
  o += "<rect x=\"" + num(kLeft, 0) + "\" y=\"" + num(kTop, 0) + "\" width=\"" + num(pw, 0) + "\" height=\"" +
       num(ph, 0) + "\" class=\"frame\"/>\n";
  for (int k = 0; k <= 4; ++k) {
    const double v = top * k / 4.0;
    o += "<line x1=\"" + num(kLeft, 0) + "\" x2=\"" + num(kLeft + pw, 0) + "\" y1=\"" + num(y(v), 1) + "\" y2=\"" +
         num(y(v), 1) + "\" class=\"grid\"/><text x=\"" + num(kLeft - 4, 0) + "\" y=\"" + num(y(v) + 4, 1) +
         "\" class=\"ytick\">" + num(v, top < 4 ? 2 : top < 40 ? 1 : 0) + "</text>\n";
  }
  for (int k = 0; k <= 4 && n > 0; ++k) {
    const size_t i = (n - 1) * static_cast<size_t>(k) / 4;
    o += "<text x=\"" + num(x(i), 1) + "\" y=\"" + num(kH - kBottom + 16, 0) + "\" class=\"xtick\">" +
         when(r.buckets[i].start).substr(5) + "</text>\n";
  }
  o += "<text x=\"12\" y=\"" + num(kTop + ph / 2, 0) + "\" class=\"yunit\" transform=\"rotate(-90 12 " +
       num(kTop + ph / 2, 0) + ")\">" + esc(unit) + "</text>\n";
  for (size_t s = 0; s < series.size(); ++s) {
    std::string pts;
    for (size_t i = 0; i < series[s].values.size(); ++i) {
      pts += (i ? " " : "") + num(x(i), 1) + "," + num(y(series[s].values[i]), 1);
    }
    o += "<polyline class=\"series\" data-series=\"" + esc(series[s].name) + "\" fill=\"none\" stroke=\"" +
         series[s].color + "\" stroke-width=\"2\" points=\"" + pts + "\"/>\n";
    const double ly = kTop + 14.0 * static_cast<double>(s) + 8;
    o += "<rect x=\"" + num(kW - kRight + 12, 0) + "\" y=\"" + num(ly - 8, 0) + "\" width=\"10\" height=\"10\" fill=\"" +
         series[s].color + "\"/><text x=\"" + num(kW - kRight + 26, 0) + "\" y=\"" + num(ly + 1, 0) +
         "\" class=\"legend\">" + esc(series[s].name) + "</text>\n";
  }
  return o + "</svg>\n";
}

// Leased against busy GPU-hours per tenant, as paired bars labelled with
// their values.
std::string roi_plot(const Report& r) {
  const size_t n = r.tenants.size();
  const int h = kTop + 12 + static_cast<int>(n) * 44;
  double top = 0;
  for (const TenantReport& t : r.tenants) top = std::max({top, t.gpu_hours_leased, t.gpu_hours_busy});
  top = top > 0 ? top : 1.0;
  const double pw = kW - 160 - 90;
  std::string o = "<svg id=\"plot-roi\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                  std::to_string(kW) + "\" height=\"" + std::to_string(h) + "\" viewBox=\"0 0 " + std::to_string(kW) +
                  " " + std::to_string(h) + "\" role=\"img\">\n<title>GPU-hours leased and busy per tenant</title>\n";
  o += "<text x=\"160\" y=\"16\" class=\"ptitle\">GPU-hours leased (light) and busy (dark) per tenant</text>\n";
  for (size_t i = 0; i < n; ++i) {
    const TenantReport& t = r.tenants[i];
    const double y0 = kTop + 44.0 * static_cast<double>(i);
    o += "<g class=\"bars\" data-tenant=\"" + esc(t.tenant) + "\">\n";
    o += "<text x=\"152\" y=\"" + num(y0 + 22, 0) + "\" class=\"ytick\">" + esc(t.tenant) + "</text>\n";
    const std::pair<const char*, double> bars[] = {{"leased", t.gpu_hours_leased}, {"busy", t.gpu_hours_busy}};
    for (int b = 0; b < 2; ++b) {
      const double w = pw * bars[b].second / top;
      const double yb = y0 + 4 + 18.0 * b;
      o += "<rect class=\"bar " + std::string(bars[b].first) + "\" x=\"160\" y=\"" + num(yb, 0) + "\" width=\"" +
           num(w, 1) + "\" height=\"16\" fill=\"" + color(i) + "\" fill-opacity=\"" + (b ? "1" : "0.35") + "\"/>";
      o += "<text class=\"value " + std::string(bars[b].first) + "\" x=\"" + num(164 + w, 1) + "\" y=\"" +
           num(yb + 12, 0) + "\">" + num(bars[b].second) + "</text>\n";
    }
    o += "</g>\n";
  }
  return o + "</svg>\n";
}

std::string tenant_row(const TenantReport& t, bool total) {
  std::string o = "<tr data-tenant=\"" + esc(t.tenant) + "\"" + (total ? " class=\"total\"" : "") + ">";
  auto td = [&](const std::string& cls, const std::string& v) { o += "<td class=\"" + cls + "\">" + v + "</td>"; };
  td("tenant", total ? "all tenants" : esc(t.tenant));
  td("leases", std::to_string(t.leases));
  td("leased", num(t.gpu_hours_leased));
  td("busy", num(t.gpu_hours_busy));
  td("ratio", num(100.0 * ratio(t.gpu_hours_busy, t.gpu_hours_leased), 1) + "%");
  td("unmeasured", num(t.gpu_hours_unmeasured));
  td("waits", std::to_string(t.wait.count));
  td("p50", num(t.wait.p50_s, 1));
  td("p95", num(t.wait.p95_s, 1));
  td("max", num(t.wait.max_s, 1));
  td("gave_up", std::to_string(t.gave_up));
  return o + "</tr>\n";
}

const char kStyle[] = R"(body{font-family:sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:8px 0 24px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}tr.total{font-weight:bold}
.plot{display:block;margin:8px 0 24px}.frame{fill:none;stroke:#888}.grid{stroke:#eee}
.ytick{font-size:11px;text-anchor:end}.xtick{font-size:11px;text-anchor:middle}.legend,.value{font-size:11px}
.ptitle{font-size:13px;font-weight:bold}.yunit{font-size:11px;text-anchor:middle}.note{color:#666;font-size:13px})";

}  // namespace

std::string report_json(const Report& r) {
  json tenants = json::array(), devices = json::array(), buckets = json::array();
  for (const TenantReport& t : r.tenants) tenants.push_back(tenant_json(t));
  for (const DeviceReport& d : r.devices) {
    devices.push_back({{"server", d.server},
                       {"device", d.device},
                       {"kind", d.kind},
                       {"hours_measured", r4(d.hours_measured)},
                       {"gpu_hours_leased", r4(d.gpu_hours_leased)},
                       {"gpu_hours_busy", r4(d.gpu_hours_busy)},
                       {"gpu_hours_busy_leased", r4(d.gpu_hours_busy_leased)}});
  }
  for (const Bucket& b : r.buckets) {
    json by = json::object();
    for (const auto& [name, v] : b.leased_by_tenant) by[name] = r4(v);
    buckets.push_back({{"start_ms", b.start},
                       {"measured_gpus", r4(b.measured_gpus)},
                       {"leased_gpus", r4(b.leased_gpus)},
                       {"busy_gpus", r4(b.busy_gpus)},
                       {"queued", r4(b.queued)},
                       {"leased_by_tenant", std::move(by)}});
  }
  json j{{"schema", "rgpu-pool-report-v1"},
         {"window", {{"from_ms", r.from}, {"to_ms", r.to}, {"bucket_ms", r.bucket_ms}}},
         {"input", {{"events", r.events}, {"skipped_lines", r.skipped_lines}, {"unmatched_ends", r.unmatched_ends}}},
         {"total", tenant_json(r.total)},
         {"tenants", std::move(tenants)},
         {"devices", std::move(devices)},
         {"over_time", std::move(buckets)}};
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string report_html(const Report& r) {
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>rgpu pool usage " +
                  when(r.from) + " to " + when(r.to) + " UTC</title>\n<style>" + kStyle + "</style></head><body>\n";
  o += "<h1>rgpu pool usage</h1>\n<p id=\"window\">From " + when(r.from) + " to " + when(r.to) + " UTC, in buckets of " +
       num(static_cast<double>(r.bucket_ms) / 60000.0, 0) + " min. Read " + std::to_string(r.events) + " events";
  if (r.skipped_lines) o += ", skipped " + std::to_string(r.skipped_lines) + " bad lines";
  o += ".</p>\n<p class=\"note\">GPU-hours: device-equivalents (the larger of a lease's compute share and its part of "
       "the device's memory) times hours. Busy: the device's reported utilization over the leased time, split "
       "between the leases on a device by what each holds.</p>\n";

  o += "<h2>Tenants</h2>\n<table id=\"tenants\"><thead><tr><th>tenant</th><th>leases</th><th>GPU-h leased</th>"
       "<th>GPU-h busy</th><th>busy/leased</th><th>GPU-h unmeasured</th><th>grants</th><th>wait p50 s</th>"
       "<th>wait p95 s</th><th>wait max s</th><th>gave up</th></tr></thead><tbody>\n";
  for (const TenantReport& t : r.tenants) o += tenant_row(t, false);
  o += tenant_row(r.total, true) + "</tbody></table>\n";

  o += roi_plot(r);
  std::vector<Series> pool = {{"reporting", "#888888", {}}, {"leased", "#1f77b4", {}}, {"busy", "#d62728", {}}};
  std::vector<Series> queue = {{"queued", "#9467bd", {}}};
  std::vector<Series> by_tenant;
  for (size_t i = 0; i < r.tenants.size(); ++i) by_tenant.push_back({r.tenants[i].tenant, color(i), {}});
  for (const Bucket& b : r.buckets) {
    pool[0].values.push_back(b.measured_gpus);
    pool[1].values.push_back(b.leased_gpus);
    pool[2].values.push_back(b.busy_gpus);
    queue[0].values.push_back(b.queued);
    for (Series& s : by_tenant) {
      auto it = b.leased_by_tenant.find(s.name);
      s.values.push_back(it == b.leased_by_tenant.end() ? 0.0 : it->second);
    }
  }
  o += "<h2>Over time</h2>\n";
  o += line_plot(r, "plot-pool", "Devices reporting, leased and busy", "GPUs", pool);
  o += line_plot(r, "plot-tenants", "Leased by tenant", "GPUs", by_tenant);
  o += line_plot(r, "plot-queue", "Requests waiting", "requests", queue);

  o += "<h2>Devices</h2>\n<table id=\"devices\"><thead><tr><th>server</th><th>device</th><th>kind</th>"
       "<th>hours measured</th><th>GPU-h leased</th><th>GPU-h busy</th><th>busy while leased</th></tr></thead>"
       "<tbody>\n";
  for (const DeviceReport& d : r.devices) {
    o += "<tr data-device=\"" + esc(d.server) + "/" + std::to_string(d.device) + "\"><td class=\"server\">" +
         esc(d.server) + "</td><td class=\"device\">" + std::to_string(d.device) + "</td><td class=\"kind\">" +
         esc(d.kind) + "</td><td class=\"measured\">" + num(d.hours_measured) + "</td><td class=\"leased\">" +
         num(d.gpu_hours_leased) + "</td><td class=\"busy\">" + num(d.gpu_hours_busy) + "</td><td class=\"busy_leased\">" +
         num(d.gpu_hours_busy_leased) + "</td></tr>\n";
  }
  o += "</tbody></table>\n</body></html>\n";
  return o;
}

}  // namespace rgpu::pool
