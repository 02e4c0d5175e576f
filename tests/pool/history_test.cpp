// The usage history: its lines both ways, reading back untrusted files
// (torn, corrupt, hostile), the file across restarts and rotation, and
// what the recorder makes of heartbeats and the queue.
#include "rgpu/pool/history.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "rgpu/pool/report.h"

namespace rgpu::pool {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/rgpu-history-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

HistoryEvent a_grant(Millis t, LeaseId id) {
  return {t, LeaseGranted{id, "team", 20, 1500, {{"srv0", 1, 2, 1ull << 34, 0.25}, {"srv1", 0, 0, 0, 1.0}}}};
}

TEST(History, EveryEventRoundTrips) {
  const std::vector<HistoryEvent> events = {
      {1, PoolStarted{}},
      {2, ServerSeen{"srv0", {{0, "NVIDIA H100", 80ull << 30}, {1, "cpu", 1ull << 34}}}},
      a_grant(3, 42),
      {4, LeaseEnded{42, "preempted"}},
      {5, RequestGaveUp{"team", 600'000}},
      {6, UtilizationSample{"srv0", 60'000, {{0, 0.75, 123}, {1, 0.0, 0}}}},
      {7, QueueSample{3, {{"a", 1}, {"b", 2}}}},
  };
  for (const HistoryEvent& e : events) {
    const std::string line = encode_event(e);
    EXPECT_EQ(line.find('\n'), std::string::npos);
    auto back = decode_event(line);
    ASSERT_TRUE(back.is_ok()) << line << ": " << back.status().to_string();
    EXPECT_EQ(back.value().t, e.t);
    EXPECT_EQ(back.value().body.index(), e.body.index());
    EXPECT_EQ(encode_event(back.value()), line);
  }
  auto g = std::get<LeaseGranted>(decode_event(encode_event(a_grant(3, 42))).value().body);
  EXPECT_EQ(g.tenant, "team");
  EXPECT_EQ(g.waited_ms, 1500);
  ASSERT_EQ(g.devices.size(), 2u);
  EXPECT_EQ(g.devices[0].memory_bytes, 1ull << 34);
  EXPECT_DOUBLE_EQ(g.devices[0].share, 0.25);
}

TEST(History, BadLinesAreErrorsNotCrashes) {
  const char* bad[] = {
      "", "{", "null", "[]", "42", "\"x\"", "{}", R"({"t":1})", R"({"e":"start"})", R"({"e":"start","t":-1})",
      R"({"e":"start","t":1.5})", R"({"e":"start","t":"1"})", R"({"e":"nope","t":1})",
      R"({"e":"end","t":1,"lease":-3,"reason":"x"})", R"({"e":"end","t":1,"lease":18446744073709551616,"reason":"x"})",
      R"({"e":"grant","t":1,"lease":1,"tenant":"a","priority":1,"waited_ms":0,"devices":{}})",
      R"({"e":"grant","t":1,"lease":1,"tenant":"a","priority":1,"waited_ms":0,"devices":[1]})",
      R"({"e":"grant","t":1,"lease":1,"tenant":"a","priority":1,"waited_ms":0,"devices":[{"server":"s"}]})",
      R"({"e":"grant","t":1,"lease":1,"tenant":"a","priority":99999999999,"waited_ms":0,"devices":[]})",
      R"({"e":"util","t":1,"server":"s","span_ms":1,"devices":[{"d":0,"u":1.5,"m":0}]})",
      R"({"e":"util","t":1,"server":"s","span_ms":1,"devices":[{"d":0,"u":NaN,"m":0}]})",
      R"({"e":"queue","t":1,"queued":1,"tenants":{"a":-1}})", R"({"e":"queue","t":1,"queued":1,"tenants":[]})",
  };
  for (const char* line : bad) EXPECT_FALSE(decode_event(line).is_ok()) << line;
  EXPECT_FALSE(decode_event(std::string(kMaxHistoryLine + 1, ' ')).is_ok());
  // Deep nesting within the line limit, and random bytes: errors, no crash.
  EXPECT_FALSE(decode_event(std::string(30'000, '[') + std::string(30'000, ']')).is_ok());
  std::mt19937 rng(7);
  const std::string good = encode_event(a_grant(3, 42));
  for (int i = 0; i < 2000; ++i) {
    std::string s = good;
    for (int k = 0; k < 3; ++k) s[rng() % s.size()] = static_cast<char>(rng());
    (void)decode_event(s);  // any answer, as long as it returns
  }
}

TEST(History, ReadSkipsBadLinesAndToleratesATornTail) {
  HistoryRead read;
  const std::string text = encode_event({1, PoolStarted{}}) + "\n" + "garbage\n" + "\n" + encode_event(a_grant(2, 7)) +
                           "\n" + R"({"e":"end","t":3,"le)";
  read_history_text(text, &read);
  EXPECT_EQ(read.events.size(), 2u);
  EXPECT_EQ(read.skipped, 1u);
  EXPECT_TRUE(read.torn_tail);
  EXPECT_NE(read.first_error.find("line 2"), std::string::npos) << read.first_error;
}

TEST(History, FileSurvivesARestartAndCutsATornLine) {
  TempDir dir;
  const std::string path = dir.file("history.jsonl");
  {
    auto h = History::open({.path = path}, 1000);
    ASSERT_TRUE(h.is_ok()) << h.status().to_string();
    h.value()->record(a_grant(2000, 1));
  }
  // A crash in the middle of a write, then a line an editor mangled.
  {
    std::ofstream out(path, std::ios::app);
    out << "not json\n" << R"({"e":"end","t":3000,"lea)";
  }
  auto h = History::open({.path = path}, 5000);
  ASSERT_TRUE(h.is_ok());
  EXPECT_EQ(h.value()->skipped_at_open(), 1u);
  // Read back: start, grant; then this process's start.
  ASSERT_EQ(h.value()->events().size(), 3u);
  EXPECT_TRUE(std::holds_alternative<LeaseGranted>(h.value()->events()[1].body));
  h.value()->released(1, 6000);
  h.value().reset();
  auto read = read_history(path);
  ASSERT_TRUE(read.is_ok());
  EXPECT_FALSE(read.value().torn_tail);
  EXPECT_EQ(read.value().skipped, 1u);  // "not json"; the torn line was cut off
  ASSERT_EQ(read.value().events.size(), 4u);
  EXPECT_EQ(std::get<LeaseEnded>(read.value().events[3].body).lease, 1u);
  EXPECT_FALSE(read_history(dir.file("absent")).is_ok());
}

// Lines far past the limit (one spanning several read chunks) are skipped
// without being held whole, and the lines around them still count.
TEST(History, HugeLinesAreSkippedUnread) {
  TempDir dir;
  const std::string path = dir.file("history.jsonl");
  {
    std::ofstream out(path, std::ios::binary);
    out << encode_event({1, PoolStarted{}}) << "\n"
        << std::string(100'000, 'x') << "\n"
        << encode_event(a_grant(2, 7)) << "\n"
        << std::string(3'000'000, '{') << "\n"
        << encode_event({3, LeaseEnded{7, "released"}}) << "\n"
        << std::string(2'000'000, 'y');
  }
  auto read = read_history(path);
  ASSERT_TRUE(read.is_ok()) << read.status().to_string();
  EXPECT_EQ(read.value().events.size(), 3u);
  EXPECT_EQ(read.value().skipped, 2u);
  EXPECT_TRUE(read.value().torn_tail);
  EXPECT_EQ(read.value().lines, 6u);
  EXPECT_NE(read.value().first_error.find("line 2: line too long"), std::string::npos) << read.value().first_error;
  EXPECT_FALSE(read_history(dir.file("")).is_ok());  // a directory
}

TEST(History, RotationKeepsOpenLeasesAndBoundsTheFiles) {
  TempDir dir;
  const std::string path = dir.file("history.jsonl");
  auto h = History::open({.path = path, .max_file_bytes = 4096, .fsync_interval_ms = 86'400'000}, 0);
  ASSERT_TRUE(h.is_ok());
  ServerInfo s{"srv0", "a:1", {Device{0, "NVIDIA H100", 90, 80ull << 30, {}}}};
  h.value()->server_registered(s, 0);
  h.value()->record({0, LeaseGranted{1, "long", 10, 0, {{"srv0", 0, 0, 0, 1.0}}}});
  for (Millis t = 1; t <= 2000; ++t) h.value()->record({t * 1000, QueueSample{static_cast<uint64_t>(t % 3), {}}});
  h.value()->released(1, 3'600'000);
  h.value().reset();
  EXPECT_LE(fs::file_size(path), 4096u + 512);
  EXPECT_LE(fs::file_size(path + ".1"), 4096u + 512);
  auto read = read_history(path);
  ASSERT_TRUE(read.is_ok());
  EXPECT_EQ(read.value().skipped, 0u);
  ReportOptions o;
  o.since_ms = 3'600'000;
  auto r = make_report(read.value().events, o);
  ASSERT_TRUE(r.is_ok());
  // The grant's own line is long gone, yet the lease is there, once.
  ASSERT_EQ(r.value().tenants.size(), 1u);
  EXPECT_EQ(r.value().tenants[0].tenant, "long");
  EXPECT_DOUBLE_EQ(r.value().tenants[0].gpu_hours_leased, 1.0);
  EXPECT_EQ(r.value().unmatched_ends, 0u);
}

TEST(History, HeartbeatsBecomeOneSamplePerInterval) {
  auto h = History::open({.path = "", .sample_interval_ms = 60'000, .heartbeat_interval_ms = 5'000}, 0);
  ASSERT_TRUE(h.is_ok());
  // Twelve heartbeats, 5 s apart: six at 0.2, six at 0.8 for device 0.
  for (int i = 1; i <= 12; ++i) {
    h.value()->heartbeat("srv0", {{0, 100, i <= 6 ? 0.2 : 0.8}, {1, 0, 1.7}}, i * 5'000 - 5'000);
  }
  ASSERT_EQ(h.value()->events().size(), 2u);  // start, one sample
  const auto& u = std::get<UtilizationSample>(h.value()->events()[1].body);
  EXPECT_EQ(u.span_ms, 60'000);
  ASSERT_EQ(u.devices.size(), 2u);
  EXPECT_DOUBLE_EQ(u.devices[0].utilization, 0.5);
  EXPECT_DOUBLE_EQ(u.devices[1].utilization, 1.0);  // clamped
  EXPECT_EQ(u.devices[0].memory_used_bytes, 100u);
}

TEST(History, QueueIsRecordedWhenItChanges) {
  auto h = History::open({}, 0);
  ASSERT_TRUE(h.is_ok());
  QueuedView v;
  v.request.tenant = "a";
  h.value()->queue({}, 1);      // same as at start: nothing
  h.value()->queue({v, v}, 2);  // 2
  h.value()->queue({v, v}, 3);  // unchanged
  h.value()->queue({v}, 4);     // 1
  ASSERT_EQ(h.value()->events().size(), 3u);
  EXPECT_EQ(std::get<QueueSample>(h.value()->events()[1].body).by_tenant.at("a"), 2u);
  EXPECT_EQ(std::get<QueueSample>(h.value()->events()[2].body).queued, 1u);
}

TEST(History, MemoryIsBoundedYetOpenLeasesStayVisible) {
  auto h = History::open({.path = "", .max_events = 10}, 0);
  ASSERT_TRUE(h.is_ok());
  h.value()->record(a_grant(1, 5));
  for (Millis t = 2; t < 100; ++t) h.value()->record({t, QueueSample{static_cast<uint64_t>(t % 2), {}}});
  EXPECT_EQ(h.value()->events().size(), 10u);
  auto snap = h.value()->snapshot();
  ASSERT_EQ(snap.size(), 11u);
  EXPECT_TRUE(std::holds_alternative<LeaseGranted>(snap.front().body));
}

}  // namespace
}  // namespace rgpu::pool
