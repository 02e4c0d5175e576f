// `rgpu pool report`: the usage report of a pool's history, as JSON and as
// an HTML page (docs/pool.md, "Usage report"). It reads the history file
// the pool writes, or asks a running pool for its history (the report is
// computed here, from the events the pool sends).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "pool_report_cli.h"
#include "rgpu/pool/client.h"
#include "rgpu/pool/report.h"
#include "pool.capnp.h"

namespace rgpu::tools {
namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: rgpu pool report (--history FILE | --pool HOST:PORT) [--since DURATION]\n"
               "                        [--end MS] [--bucket DURATION] [--json OUT] [--html OUT]\n"
               "\n"
               "report   GPU-hours leased against GPU-hours busy per tenant and per device, queue\n"
               "         waits and the pool's use over time, for the last DURATION (default 24h;\n"
               "         e.g. 90m, 24h, 7d) up to the history's last event (or --end, in ms since\n"
               "         the epoch). --history reads the pool's history file (history.file in\n"
               "         pool.toml; its rotated part FILE.1 too); --pool asks a running rgpu-pool\n"
               "         (started with --history) for it. --json and --html write the\n"
               "         report (- for stdout); with neither, a summary table is printed.\n");
}

bool write_out(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return true;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "rgpu pool report: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

void print_summary(const pool::Report& r) {
  std::printf("%-20s %7s %12s %12s %6s %9s %9s %9s\n", "tenant", "leases", "gpu-h leased", "gpu-h busy", "busy",
              "wait p50", "wait p95", "wait max");
  auto row = [](const pool::TenantReport& t, const char* name) {
    const double ratio = t.gpu_hours_leased > 0 ? 100.0 * t.gpu_hours_busy / t.gpu_hours_leased : 0.0;
    std::printf("%-20s %7zu %12.2f %12.2f %5.1f%% %8.1fs %8.1fs %8.1fs\n", name, t.leases, t.gpu_hours_leased,
                t.gpu_hours_busy, ratio, t.wait.p50_s, t.wait.p95_s, t.wait.max_s);
  };
  for (const pool::TenantReport& t : r.tenants) row(t, t.tenant.c_str());
  row(r.total, "(all)");
}

// The history a running pool keeps, read as a file's lines would be: the
// pool is a peer, so its lines are checked like any file's.
Result<pool::HistoryRead> ask_pool(const std::string& list, const pool::ReportOptions& opt) {
  auto addresses = pool::net::parse_addresses(list);
  if (!addresses.is_ok()) return addresses.status();
  // With --end the window is not the last `since` of the history: ask for all.
  auto reply = pool::client::query_history(addresses.value(), opt.end > 0 ? 0 : opt.since_ms,
                                           std::chrono::seconds(30));
  if (!reply.is_ok()) return reply.status();
  auto h = reply.value().root().getHistory();
  if (!h.getKept()) return failed("the pool keeps no history (start rgpu-pool with --history FILE)");
  if (h.getTruncated()) {
    std::fprintf(stderr, "rgpu pool report: the pool's reply left out its oldest events (too many); "
                         "the report's start may be short\n");
  }
  pool::HistoryRead read;
  std::string text;
  for (auto line : h.getLines()) {
    text.append(line.cStr(), line.size());
    text.push_back('\n');
  }
  pool::read_history_text(text, &read);
  return read;
}

}  // namespace

int pool_report_main(int argc, char** argv) {
  std::string history, pool_addr, json_out, html_out;
  pool::ReportOptions opt;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    } else if (arg == "--history" && (v = value())) {
      history = v;
    } else if (arg == "--pool" && (v = value())) {
      pool_addr = v;
    } else if (arg == "--json" && (v = value())) {
      json_out = v;
    } else if (arg == "--html" && (v = value())) {
      html_out = v;
    } else if ((arg == "--since" || arg == "--bucket") && (v = value())) {
      auto d = pool::parse_duration(v);
      if (!d.is_ok()) {
        std::fprintf(stderr, "rgpu pool report: %s: %s\n", arg.c_str(), d.status().message().c_str());
        return 2;
      }
      (arg == "--since" ? opt.since_ms : opt.bucket_ms) = d.value();
    } else if (arg == "--end" && (v = value())) {
      char* end = nullptr;
      opt.end = std::strtoll(v, &end, 10);
      if (*v == '\0' || *end != '\0' || opt.end <= 0) {
        std::fprintf(stderr, "rgpu pool report: --end wants milliseconds since the epoch\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "rgpu pool report: unexpected argument '%s'\n", arg.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (history.empty() == pool_addr.empty()) {
    usage(stderr);
    return 2;
  }
  Result<pool::HistoryRead> read = pool_addr.empty() ? pool::read_history(history) : ask_pool(pool_addr, opt);
  if (!read.is_ok()) {
    std::fprintf(stderr, "rgpu pool report: %s\n", read.status().message().c_str());
    return 1;
  }
  if (read.value().skipped > 0) {
    std::fprintf(stderr, "rgpu pool report: skipped %zu bad lines of %s (first: %s)\n", read.value().skipped,
                 pool_addr.empty() ? history.c_str() : "the pool's reply", read.value().first_error.c_str());
  }
  auto r = pool::make_report(read.value().events, opt);
  if (!r.is_ok()) {
    std::fprintf(stderr, "rgpu pool report: %s\n", r.status().message().c_str());
    return 1;
  }
  r.value().skipped_lines = read.value().skipped;
  bool ok = true;
  if (!json_out.empty()) ok = write_out(json_out, pool::report_json(r.value())) && ok;
  if (!html_out.empty()) ok = write_out(html_out, pool::report_html(r.value())) && ok;
  if (json_out.empty() && html_out.empty()) print_summary(r.value());
  return ok ? 0 : 1;
}

}  // namespace rgpu::tools
