// A small etcd v3 client over etcd's JSON gateway (HTTP POST to /v3/kv/*,
// /v3/lease/*, /v3/watch; keys and values travel base64-encoded). Just what
// the pool's shared state needs: ranges, puts, deletes, transactions,
// leases and a prefix watch. Every call has a deadline and answers with a
// status, never an exception.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rgpu/common/status.h"

namespace httplib {
class Client;
}

namespace rgpu::pool {

struct EtcdOptions {
  // "http://HOST:PORT" or "HOST:PORT", tried in order: a call that cannot
  // reach one endpoint goes to the next, and later calls start from the
  // endpoint that last answered.
  std::vector<std::string> endpoints;
  int64_t timeout_ms = 2000;  // each of connect, send and receive, per call
};

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
};

struct RangeResult {
  int64_t revision = 0;  // the store's revision the answer was read at
  std::vector<KeyValue> kvs;
};

// One comparison of a transaction. A key that does not exist compares as
// revision 0 and version 0 (so "mod_revision == 0" means "absent").
struct EtcdCompare {
  enum class Target { kModRevision, kCreateRevision, kVersion, kValue };
  enum class Result { kEqual, kNotEqual, kGreater, kLess };
  std::string key;
  Target target = Target::kModRevision;
  Result result = Result::kEqual;
  int64_t number = 0;  // for the revision and version targets
  std::string value;   // for kValue
};

// One operation of a transaction: put (with an optional etcd lease),
// delete, or read a key. `prefix` widens delete and read to every key that
// starts with `key`.
struct EtcdOp {
  enum class Kind { kPut, kDelete, kRange };
  Kind kind = Kind::kPut;
  std::string key;
  std::string value;
  int64_t lease = 0;
  bool prefix = false;

  static EtcdOp put(std::string k, std::string v, int64_t lease = 0) { return {Kind::kPut, std::move(k), std::move(v), lease, false}; }
  static EtcdOp erase(std::string k) { return {Kind::kDelete, std::move(k), {}, 0, false}; }
  static EtcdOp read(std::string k, bool prefix = false) { return {Kind::kRange, std::move(k), {}, 0, prefix}; }
};

struct TxnResult {
  bool succeeded = false;
  int64_t revision = 0;  // the revision the transaction wrote (or read) at
  // For each kRange operation of the branch that ran, in order, its keys.
  std::vector<std::vector<KeyValue>> ranges;
};

// Calls are serialized on one connection per endpoint. Thread-safe.
class EtcdClient {
 public:
  explicit EtcdClient(EtcdOptions options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  const EtcdOptions& options() const { return options_; }

  Result<RangeResult> range(const std::string& key, bool prefix = false);
  // Returns the revision of the write.
  Result<int64_t> put(const std::string& key, const std::string& value, int64_t lease = 0);
  Result<int64_t> erase(const std::string& key, bool prefix = false);
  Result<TxnResult> txn(const std::vector<EtcdCompare>& compare, const std::vector<EtcdOp>& success,
                        const std::vector<EtcdOp>& failure = {});

  // An etcd lease of `ttl_s` seconds (etcd may raise very short ones);
  // returns its id. Keys put with it vanish when it expires or is revoked.
  Result<int64_t> grant_lease(int64_t ttl_s);
  // Renews a lease for its full TTL; returns the TTL granted. An expired or
  // unknown lease is a kFailed error saying so.
  Result<int64_t> keep_alive(int64_t lease);
  Status revoke_lease(int64_t lease);

  // POSTs `body` (JSON) to `path` and returns the parsed JSON text, or an
  // error: kDisconnected when no endpoint answered in time, kFailed when
  // etcd refused. Used by the calls above and by EtcdWatch's setup.
  Result<std::string> call(const std::string& path, const std::string& body);

 private:
  struct Conn;
  EtcdOptions options_;
  std::mutex mu_;
  size_t current_ = 0;
  std::vector<std::unique_ptr<Conn>> conns_;
};

struct WatchEvent {
  bool deleted = false;
  KeyValue kv;  // for a delete: the key and the revision of the delete
};

// What a watch reports: events of one or more revisions in order, or that
// history it needed is gone (compacted; the reader must reload), with the
// revision everything up to which has now been reported.
struct WatchBatch {
  int64_t revision = 0;
  bool compacted = false;
  std::vector<WatchEvent> events;
};

// Watches every key under a prefix from a revision on, on its own thread,
// handing each batch to `on_batch` in revision order. A broken stream is
// reopened (on the next endpoint when one fails) from the revision after
// the last one reported, so no event is lost or repeated. on_batch returns
// 0 to go on, or a revision to continue from instead (after a compacted
// batch, the reader reloads and says where its reload ended, plus one).
// on_batch runs on the watch's thread; the destructor stops and joins it,
// so on_batch must not destroy the watch. Thread-safe.
class EtcdWatch {
 public:
  using Callback = std::function<int64_t(const WatchBatch&)>;
  EtcdWatch(EtcdOptions options, std::string prefix, int64_t start_revision, Callback on_batch);
  ~EtcdWatch();
  EtcdWatch(const EtcdWatch&) = delete;
  EtcdWatch& operator=(const EtcdWatch&) = delete;

 private:
  void run();
  EtcdOptions options_;
  std::string prefix_;
  int64_t next_revision_;
  Callback on_batch_;
  std::atomic<bool> stop_{false};
  std::mutex client_mu_;
  std::shared_ptr<httplib::Client> client_;  // the open stream, to stop it
  std::thread thread_;
};

// The first key after every key that starts with `prefix` (etcd's
// range_end for a prefix).
std::string etcd_prefix_end(const std::string& prefix);

}  // namespace rgpu::pool
