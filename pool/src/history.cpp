// The usage history in memory and in its file (see history.h).
#include "rgpu/pool/history.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "rgpu/common/log.h"

namespace rgpu::pool {
namespace {

// Reads the lines of `path` into `into`, in chunks, so memory stays bounded
// by the line limit however large the file or its lines: a line past
// kMaxHistoryLine is skipped unread. Returns false when the file does not
// exist; `*complete` gets the offset just past its last newline.
Result<bool> read_lines(const std::string& path, HistoryRead* into, uint64_t* complete) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    return failed("cannot read " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return failed(path + " is not a regular file");
  }
  std::string block;  // whole lines, then the start of the next
  std::vector<char> chunk(1 << 20);
  uint64_t offset = 0;
  bool overlong = false;  // inside a line past the limit, skipping to its end
  for (;;) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return failed("cannot read " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    for (size_t i = 0; i < static_cast<size_t>(n);) {
      const char* start = chunk.data() + i;
      const char* nl = static_cast<const char*>(std::memchr(start, '\n', static_cast<size_t>(n) - i));
      const size_t len = nl ? static_cast<size_t>(nl - start) + 1 : static_cast<size_t>(n) - i;
      i += len;
      offset += len;
      if (!overlong) {
        const size_t line_start = block.rfind('\n') == std::string::npos ? 0 : block.rfind('\n') + 1;
        if (block.size() - line_start + len > kMaxHistoryLine + 1) {
          // The lines before it first, so that line numbers stay right.
          read_history_text(std::string_view(block).substr(0, line_start), into);
          block.clear();
          overlong = true;
        } else {
          block.append(start, len);
        }
      }
      if (nl) {
        *complete = offset;
        if (overlong) {
          ++into->lines;
          if (into->skipped++ == 0) into->first_error = "line " + std::to_string(into->lines) + ": line too long";
          overlong = false;
        }
      }
    }
    // Hand over the whole lines gathered so far.
    const size_t last = block.rfind('\n');
    if (last != std::string::npos) {
      read_history_text(std::string_view(block).substr(0, last + 1), into);
      block.erase(0, last + 1);
    }
  }
  ::close(fd);
  if (overlong) {
    ++into->lines;
    into->torn_tail = true;
  } else if (!block.empty()) {
    read_history_text(block, into);  // marks the torn tail
  }
  return true;
}

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Result<HistoryRead> read_history(const std::string& path) {
  HistoryRead out;
  uint64_t complete = 0;
  auto rotated = read_lines(path + ".1", &out, &complete);
  if (!rotated.is_ok()) return rotated.status();
  // A torn line in the rotated part is a bad line like any other.
  if (out.torn_tail) {
    out.torn_tail = false;
    ++out.skipped;
  }
  auto current = read_lines(path, &out, &complete);
  if (!current.is_ok()) return current.status();
  if (!current.value()) return failed("no history file " + path);
  return out;
}

History::History(HistoryOptions options) : options_(std::move(options)) {}

History::~History() {
  if (fd_ >= 0) {
    if (dirty_) ::fdatasync(fd_);
    ::close(fd_);
  }
}

Result<std::unique_ptr<History>> History::open(HistoryOptions options, Millis now) {
  std::unique_ptr<History> h(new History(std::move(options)));
  const std::string& path = h->options_.path;
  if (!path.empty()) {
    HistoryRead read;
    uint64_t keep_bytes = 0;
    auto rotated = read_lines(path + ".1", &read, &keep_bytes);
    if (!rotated.is_ok()) return rotated.status();
    read.torn_tail = false;
    keep_bytes = 0;
    auto current = read_lines(path, &read, &keep_bytes);
    if (!current.is_ok()) return current.status();
    h->skipped_at_open_ = read.skipped;
    if (read.skipped > 0) {
      RGPU_WARN("history path=%s skipped_lines=%zu first=\"%s\"", path.c_str(), read.skipped, read.first_error.c_str());
    }
    for (HistoryEvent& ev : read.events) {
      h->note_open_state(ev);
      h->events_.push_back(std::move(ev));
      if (h->events_.size() > h->options_.max_events) h->events_.pop_front();
    }
    h->fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (h->fd_ < 0) return failed("cannot open history " + path + ": " + std::strerror(errno));
    // Appends must start on a line of their own: cut off a torn last line.
    if (::ftruncate(h->fd_, static_cast<off_t>(keep_bytes)) != 0) {
      return failed("cannot truncate history " + path + ": " + std::strerror(errno));
    }
    h->file_bytes_ = keep_bytes;
    h->last_sync_ = now;
  }
  h->record({now, PoolStarted{}});
  return h;
}

void History::note_open_state(const HistoryEvent& ev) {
  if (const auto* g = std::get_if<LeaseGranted>(&ev.body)) {
    open_leases_[g->lease] = ev;
  } else if (const auto* e = std::get_if<LeaseEnded>(&ev.body)) {
    open_leases_.erase(e->lease);
  } else if (const auto* s = std::get_if<ServerSeen>(&ev.body)) {
    servers_[s->server] = ev;
  } else if (std::holds_alternative<PoolStarted>(ev.body)) {
    open_leases_.clear();  // the old process's leases went with it
    accum_.clear();
    last_queue_ = {};
  }
}

void History::record(HistoryEvent event) {
  note_open_state(event);
  if (fd_ >= 0) append_line(encode_event(event) + "\n", event.t);
  events_.push_back(std::move(event));
  if (events_.size() > options_.max_events) events_.pop_front();
}

void History::append_line(const std::string& line, Millis now) {
  if (!write_all(fd_, line)) {
    RGPU_ERROR("history path=%s write failed=\"%s\"; recording in memory only", options_.path.c_str(),
               std::strerror(errno));
    ::close(fd_);
    fd_ = -1;
    return;
  }
  file_bytes_ += line.size();
  dirty_ = true;
  if (now - last_sync_ >= options_.fsync_interval_ms) sync(now);
  if (file_bytes_ > options_.max_file_bytes) rotate(now);
}

void History::sync(Millis now) {
  if (fd_ < 0 || !dirty_) return;
  ::fdatasync(fd_);
  dirty_ = false;
  last_sync_ = now;
}

void History::rotate(Millis now) {
  const std::string& path = options_.path;
  ::fdatasync(fd_);
  ::close(fd_);
  fd_ = -1;
  if (::rename(path.c_str(), (path + ".1").c_str()) != 0) {
    RGPU_ERROR("history path=%s rotate failed=\"%s\"; recording in memory only", path.c_str(), std::strerror(errno));
    return;
  }
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_TRUNC | O_CLOEXEC, 0640);
  if (fd_ < 0) {
    RGPU_ERROR("history path=%s reopen failed=\"%s\"; recording in memory only", path.c_str(), std::strerror(errno));
    return;
  }
  file_bytes_ = 0;
  dirty_ = false;
  // What the dropped part knew that is still true: the servers and the
  // open leases (with their original times; the report counts a lease id
  // once).
  std::string head;
  for (const auto& [id, ev] : servers_) head += encode_event(ev) + "\n";
  for (const auto& [id, ev] : open_leases_) head += encode_event(ev) + "\n";
  if (!head.empty() && write_all(fd_, head)) file_bytes_ = head.size();
  sync(now);
}

std::vector<HistoryEvent> History::snapshot() const {
  // Servers and open leases whose events fell out of memory come first, so
  // a report from memory still sees them.
  std::vector<HistoryEvent> out;
  const Millis first = events_.empty() ? 0 : events_.front().t;
  for (const auto& [id, ev] : servers_) {
    if (ev.t < first) out.push_back(ev);
  }
  for (const auto& [id, ev] : open_leases_) {
    if (ev.t < first) out.push_back(ev);
  }
  out.insert(out.end(), events_.begin(), events_.end());
  return out;
}

void History::server_registered(const ServerInfo& server, Millis now) {
  ServerSeen s;
  s.server = server.id;
  for (const Device& d : server.devices) s.devices.push_back({d.index, d.kind, d.memory_bytes});
  accum_.erase(server.id);
  record({now, std::move(s)});
}

void History::changes(const Changes& changes, Millis now) {
  for (const Grant& g : changes.granted) {
    LeaseGranted e;
    e.lease = g.lease.id;
    e.tenant = g.lease.tenant;
    e.priority = g.lease.priority;
    e.waited_ms = g.waited_ms;
    for (const PlacedDevice& d : g.lease.placement) {
      e.devices.push_back({d.server_id, d.device, d.slice, d.memory_bytes, d.share});
    }
    record({now, std::move(e)});
  }
  for (const EndedLease& e : changes.ended) record({now, LeaseEnded{e.lease.id, end_reason_name(e.reason)}});
}

void History::released(LeaseId lease, Millis now) { record({now, LeaseEnded{lease, "released"}}); }

void History::gave_up(std::string_view tenant, Millis waited_ms, Millis now) {
  record({now, RequestGaveUp{std::string(tenant), waited_ms}});
}

void History::heartbeat(std::string_view server, const std::vector<DeviceUse>& use, Millis now) {
  auto it = accum_.find(server);
  if (it == accum_.end()) it = accum_.emplace(std::string(server), ServerAccum{}).first;
  ServerAccum& a = it->second;
  if (!a.started) {
    a.started = true;
    a.since = now - options_.heartbeat_interval_ms;
  }
  for (const DeviceUse& u : use) {
    DeviceAccum& d = a.devices[u.index];
    d.sum += std::clamp(u.utilization, 0.0, 1.0);
    d.memory = u.memory_used_bytes;
    ++d.n;
  }
  if (now - a.since < options_.sample_interval_ms) return;
  UtilizationSample s;
  s.server = std::string(server);
  s.span_ms = now - a.since;
  for (const auto& [index, d] : a.devices) {
    // Four decimals: finer than any utilization counter, and short lines.
    const double mean = d.n ? d.sum / static_cast<double>(d.n) : 0.0;
    s.devices.push_back({index, std::round(mean * 1e4) / 1e4, d.memory});
  }
  a.since = now;
  a.devices.clear();
  record({now, std::move(s)});
}

void History::queue(const std::vector<QueuedView>& queue, Millis now) {
  QueueSample q;
  q.queued = queue.size();
  for (const QueuedView& v : queue) ++q.by_tenant[v.request.tenant];
  if (q.queued == last_queue_.queued && q.by_tenant == last_queue_.by_tenant) return;
  last_queue_ = q;
  record({now, std::move(q)});
}

}  // namespace rgpu::pool
