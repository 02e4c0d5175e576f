// For the etcd tests: a real etcd on loopback (free ports, a temporary data
// directory, killed at the end), and a checker that replays the pool's
// whole history in etcd and says whether any state in it granted a slice
// twice.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rgpu/pool/etcd_client.h"

namespace rgpu::pool::testing {

// The etcd binary: $RGPU_ETCD, else `etcd` on PATH; empty when none.
inline std::string etcd_binary() {
  if (const char* e = std::getenv("RGPU_ETCD"); e && *e) return e;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string p = dir + "/etcd";
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return {};
}

// Whether a test that cannot run here (no etcd binary) fails instead of
// skipping: RGPU_TEST_STRICT=1, which scripts/test.sh sets when CI=true, so
// that CI cannot lose these tests to a missing package.
inline bool strict_tests() {
  const char* e = std::getenv("RGPU_TEST_STRICT");
  return e != nullptr && std::string(e) == "1";
}

inline int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

// One etcd member on 127.0.0.1. Not copyable.
class EtcdServer {
 public:
  EtcdServer() = default;
  EtcdServer(const EtcdServer&) = delete;
  EtcdServer& operator=(const EtcdServer&) = delete;
  ~EtcdServer() { stop(); }

  // Starts it and waits (bounded) until it answers. False with `why`.
  bool start(std::string* why) {
    const std::string bin = etcd_binary();
    if (bin.empty()) {
      *why = "no etcd binary (install etcd-server or set RGPU_ETCD)";
      return false;
    }
    // In memory where there is /dev/shm: etcd syncs every write to disk,
    // which on a busy machine makes each one slow.
    std::string tmpl = access("/dev/shm", W_OK) == 0 ? "/dev/shm/rgpu-etcd-XXXXXX" : "/tmp/rgpu-etcd-XXXXXX";
    if (!mkdtemp(tmpl.data())) {
      *why = "mkdtemp failed";
      return false;
    }
    dir_ = tmpl.c_str();
    for (int attempt = 0; attempt < 3; ++attempt) {
      const int client = free_port();
      const int peer = free_port();
      endpoint_ = "http://127.0.0.1:" + std::to_string(client);
      const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer);
      const std::string data = dir_ + "/data" + std::to_string(attempt);
      const std::string log = dir_ + "/etcd.log";
      std::vector<std::string> args = {bin,
                                       "--name=rgpu-test",
                                       "--data-dir=" + data,
                                       "--listen-client-urls=" + endpoint_,
                                       "--advertise-client-urls=" + endpoint_,
                                       "--listen-peer-urls=" + peer_url,
                                       "--initial-advertise-peer-urls=" + peer_url,
                                       "--initial-cluster=rgpu-test=" + peer_url,
                                       "--log-level=error",
                                       "--logger=zap"};
      pid_ = fork();
      if (pid_ == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives a test killed by its timeout
        const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
          dup2(fd, 1);
          dup2(fd, 2);
        }
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
      }
      EtcdClient c({{endpoint_}, 500});
      for (int i = 0; i < 200; ++i) {  // up to ~20 s on a busy machine
        if (c.range("/health-probe").is_ok()) return true;
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          break;  // died (a port taken meanwhile): try other ports
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      stop_process();
    }
    std::ifstream in(dir_ + "/etcd.log");
    std::stringstream ss;
    ss << in.rdbuf();
    *why = "etcd did not start; its log:\n" + ss.str();
    return false;
  }

  const std::string& endpoint() const { return endpoint_; }

  void stop() {
    stop_process();
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      dir_.clear();
    }
  }

 private:
  void stop_process() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  pid_t pid_ = -1;
  std::string dir_;
  std::string endpoint_;
};

// Replays every event under `prefix` from the first revision (the tests'
// etcd keeps all history) and checks each state the pool went through:
// a slice record holds at most `max_holds` leases, every hold names a live
// lease record that names the slice, no slice is named by two live lease
// records, and no lease id is created twice. Returns the violations (empty:
// none) and the number of leases created.
struct HistoryReport {
  std::vector<std::string> violations;
  size_t leases_created = 0;
  size_t revisions = 0;
};

inline HistoryReport check_history(const std::string& endpoint, const std::string& prefix, size_t max_holds = 1) {
  using nlohmann::json;
  HistoryReport rep;
  EtcdClient c({{endpoint}, 2000});
  Result<int64_t> end = c.put(prefix + "~end", "");
  if (!end.is_ok()) {
    rep.violations.push_back("cannot write the end marker: " + end.status().to_string());
    return rep;
  }
  std::mutex mu;
  std::condition_variable cv;
  std::vector<WatchEvent> events;
  bool done = false;
  {
    EtcdWatch w({{endpoint}, 2000}, prefix, 1, [&](const WatchBatch& b) -> int64_t {
      std::lock_guard<std::mutex> lock(mu);
      if (b.compacted) {
        done = true;
        events.clear();
      }
      for (const WatchEvent& e : b.events) events.push_back(e);
      if (b.revision >= end.value()) done = true;
      cv.notify_all();
      return 0;
    });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(20), [&] { return done; });
  }
  if (!done || events.empty()) {
    rep.violations.push_back("history not read");
    return rep;
  }
  const std::string lp = prefix + "leases/";
  const std::string sp = prefix + "slices/";
  std::map<std::string, std::set<std::string>> lease_slices;  // lease id -> slice keys
  std::map<std::string, std::set<std::string>> slice_holds;   // slice key -> lease ids
  std::set<std::string> ever;
  auto check = [&](int64_t rev) {
    rep.revisions += 1;
    std::map<std::string, std::string> owner;
    for (const auto& [id, keys] : lease_slices) {
      for (const std::string& k : keys) {
        auto [it, fresh] = owner.emplace(k, id);
        if (!fresh) rep.violations.push_back("rev " + std::to_string(rev) + ": slice " + k + " in leases " + it->second + " and " + id);
        if (!slice_holds[k].count(id)) rep.violations.push_back("rev " + std::to_string(rev) + ": lease " + id + " not held on " + k);
      }
    }
    for (const auto& [k, ids] : slice_holds) {
      if (ids.size() > max_holds) rep.violations.push_back("rev " + std::to_string(rev) + ": slice " + k + " held " + std::to_string(ids.size()) + " times");
      for (const std::string& id : ids) {
        if (!lease_slices.count(id) || !lease_slices[id].count(k)) {
          rep.violations.push_back("rev " + std::to_string(rev) + ": slice " + k + " holds unrecorded lease " + id);
        }
      }
    }
  };
  int64_t rev = events.front().kv.mod_revision;
  for (const WatchEvent& e : events) {
    if (e.kv.mod_revision != rev) {
      check(rev);
      rev = e.kv.mod_revision;
    }
    const std::string& k = e.kv.key;
    if (k.rfind(lp, 0) == 0) {
      const std::string id = k.substr(lp.size());
      if (e.deleted) {
        lease_slices.erase(id);
        continue;
      }
      json j = json::parse(e.kv.value, nullptr, false);
      if (!lease_slices.count(id)) {
        if (!ever.insert(id).second) rep.violations.push_back("lease " + id + " created twice");
        rep.leases_created += 1;
      }
      std::set<std::string> keys;
      for (const json& p : j["placement"]) {
        keys.insert(sp + p["server"].get<std::string>() + "/" + std::to_string(p["device"].get<uint32_t>()) + "/" +
                    std::to_string(p["slice"].get<uint32_t>()));
      }
      lease_slices[id] = keys;
    } else if (k.rfind(sp, 0) == 0) {
      if (e.deleted) {
        slice_holds.erase(k);
        continue;
      }
      json j = json::parse(e.kv.value, nullptr, false);
      std::set<std::string> ids;
      for (const json& h : j["holds"]) ids.insert(h["lease"].get<std::string>());
      slice_holds[k] = ids;
    }
  }
  check(rev);
  return rep;
}

// Waits up to `limit` for `pred`, calling `poll` between tries.
template <class Pred, class Poll>
bool eventually(Pred pred, Poll poll, std::chrono::milliseconds limit = std::chrono::seconds(15)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    poll();
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

}  // namespace rgpu::pool::testing
