// The pool's usage history: what it granted, what ended, how busy devices
// were and how long the queue was, kept in memory (bounded) and appended to
// a file of JSON lines so that a restarted pool keeps it. The report
// (report.h) is computed from it. The file format, the fsync policy and
// rotation are specified in docs/pool.md ("Usage history").
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "rgpu/common/status.h"
#include "rgpu/pool/model.h"
#include "rgpu/pool/scheduler.h"

namespace rgpu::pool {

// A pool process started: leases still open before it were lost with the
// old process (the report ends them at the last event before this one).
struct PoolStarted {};

// A server registered, with what the report needs of its devices.
struct ServerSeen {
  std::string server;
  struct Dev {
    uint32_t index = 0;
    std::string kind;
    uint64_t memory_bytes = 0;
  };
  std::vector<Dev> devices;
};

// A lease granted, after `waited_ms` in the queue.
struct LeaseGranted {
  LeaseId lease = 0;
  std::string tenant;
  int32_t priority = kPriorityNormal;
  Millis waited_ms = 0;
  struct Dev {
    std::string server;
    uint32_t device = 0;
    uint32_t slice = 0;
    uint64_t memory_bytes = 0;
    double share = 0.0;
  };
  std::vector<Dev> devices;
};

// A lease ended: "released" by its holder, or an EndReason's name.
struct LeaseEnded {
  LeaseId lease = 0;
  std::string reason;
};

// A queued request gave up (its wait timed out) or was cancelled.
struct RequestGaveUp {
  std::string tenant;
  Millis waited_ms = 0;
};

// Mean utilization of a server's devices over the `span_ms` before the
// event's time.
struct UtilizationSample {
  std::string server;
  Millis span_ms = 0;
  struct Dev {
    uint32_t device = 0;
    double utilization = 0.0;  // 0..1
    uint64_t memory_used_bytes = 0;
  };
  std::vector<Dev> devices;
};

// The queue's length from this time until the next sample.
struct QueueSample {
  uint64_t queued = 0;
  std::map<std::string, uint64_t> by_tenant;
};

using EventBody = std::variant<PoolStarted, ServerSeen, LeaseGranted, LeaseEnded, RequestGaveUp, UtilizationSample,
                               QueueSample>;
struct HistoryEvent {
  Millis t = 0;
  EventBody body;
};

// Limits on what one line of a history file may hold: the file is input
// (an operator may hand any file to `rgpu pool report`), so a line past
// them is skipped, never trusted.
constexpr size_t kMaxHistoryLine = 64 * 1024;
constexpr size_t kMaxHistoryDevices = 1024;

// One event as one line of JSON, without the newline.
std::string encode_event(const HistoryEvent& event);
// The event of one line, or an error saying what is wrong with it.
Result<HistoryEvent> decode_event(std::string_view line);

// What reading a history file found.
struct HistoryRead {
  std::vector<HistoryEvent> events;  // in file order
  size_t lines = 0;
  size_t skipped = 0;          // malformed or unknown lines, not counting a torn last one
  bool torn_tail = false;      // the last line had no newline (a write cut short)
  std::string first_error;     // the first skipped line's problem, with its line number
};
// Reads `path`'s rotated part (`path.1`) when present, then `path`. A
// missing `path` is an error; bad lines are skipped and counted.
Result<HistoryRead> read_history(const std::string& path);
// The same, of text already in memory (one file's contents).
void read_history_text(std::string_view text, HistoryRead* into);

struct HistoryOptions {
  std::string path;  // empty: memory only
  // Events kept in memory; the oldest are dropped past it.
  size_t max_events = 1'000'000;
  // The file is rotated (to `path.1`, replacing it) when it grows past
  // this, so the files hold at most about twice it.
  uint64_t max_file_bytes = 1ull << 30;
  // Each event is written with one write(2) as it is recorded, so a crash
  // of the pool loses none; the file is fdatasync'd when this long has
  // passed since the last sync (0: after every event) and at close, so a
  // machine's crash loses at most about this much.
  Millis fsync_interval_ms = 1'000;
  // A device's utilization is recorded at most once per this interval (the
  // mean of the heartbeats in between), which bounds the file's growth.
  Millis sample_interval_ms = 60'000;
  // What the first heartbeat of a server is taken to cover.
  Millis heartbeat_interval_ms = 5'000;
};

// Reads the [history] table of pool.toml (docs/pool.md, "Usage history"):
// file, memory_events, max_file_mb, fsync_interval_s, sample_interval_s.
// Other tables are left to their own readers; an unknown key in [history],
// a wrong type or a value out of range is an error naming the key. The
// heartbeat interval comes from PoolConfig: the service copies it in.
Result<HistoryOptions> parse_history_config(std::string_view toml_text, const std::string& where = "pool.toml");

// The history of one pool process. Thread-compatible: the service calls it
// under the mutex it holds around the scheduler. File errors are logged once
// and the history goes on in memory: usage accounting never stops the pool.
class History {
 public:
  // Opens (or creates) the file, reads back what it holds (a torn last line
  // is cut off so appends start on a line of their own) and records that a
  // pool started at `now`. An unreadable or unwritable path is an error.
  static Result<std::unique_ptr<History>> open(HistoryOptions options, Millis now);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // What the scheduler's calls report, in the service's words.
  void server_registered(const ServerInfo& server, Millis now);
  void changes(const Changes& changes, Millis now);  // grants and ends
  void released(LeaseId lease, Millis now);
  // A request that timed out or was cancelled: the service learns of a
  // timeout by ticket (Changes::timed_out) and passes its tenant and wait.
  void gave_up(std::string_view tenant, Millis waited_ms, Millis now);
  void heartbeat(std::string_view server, const std::vector<DeviceUse>& use, Millis now);
  // Recorded only when it differs from the last one recorded.
  void queue(const std::vector<QueuedView>& queue, Millis now);

  // Any event, as it is.
  void record(HistoryEvent event);
  // fdatasyncs what was written since the last sync; call it now and then
  // (each tick) so that a quiet pool's last events reach the disk.
  void sync(Millis now);

  const std::deque<HistoryEvent>& events() const { return events_; }
  // The events in memory, preceded by the servers and open leases whose
  // own events were dropped from memory: what a report of a live pool reads.
  std::vector<HistoryEvent> snapshot() const;
  // Lines skipped when the file was read back at open().
  size_t skipped_at_open() const { return skipped_at_open_; }
  bool file_ok() const { return fd_ >= 0; }

 private:
  explicit History(HistoryOptions options);
  void append_line(const std::string& line, Millis now);
  void rotate(Millis now);
  void note_open_state(const HistoryEvent& event);

  struct DeviceAccum {
    double sum = 0;
    uint64_t memory = 0;
    size_t n = 0;
  };
  struct ServerAccum {
    bool started = false;
    Millis since = 0;  // start of the span being accumulated
    std::map<uint32_t, DeviceAccum> devices;
  };

  HistoryOptions options_;
  std::deque<HistoryEvent> events_;
  int fd_ = -1;
  uint64_t file_bytes_ = 0;
  Millis last_sync_ = 0;
  bool dirty_ = false;
  size_t skipped_at_open_ = 0;
  // Re-written at the head of a new file on rotation, so a lease or server
  // older than the rotation is still known.
  std::map<LeaseId, HistoryEvent> open_leases_;
  std::map<std::string, HistoryEvent, std::less<>> servers_;
  std::map<std::string, ServerAccum, std::less<>> accum_;
  QueueSample last_queue_;
};

}  // namespace rgpu::pool
