// The etcd v3 client over the JSON gateway: requests, answers, failover
// between endpoints, and the watch's stream.
#include "rgpu/pool/etcd_client.h"

#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "etcd_json.h"
#include "rgpu/common/log.h"

namespace rgpu::pool {

using nlohmann::json;
using detail::b64;
using detail::i64;
using detail::parse_kv;
using detail::unb64;

namespace {

std::string with_scheme(const std::string& endpoint) {
  return endpoint.find("://") == std::string::npos ? "http://" + endpoint : endpoint;
}

void set_timeouts(httplib::Client& c, int64_t ms) {
  const time_t s = static_cast<time_t>(ms / 1000);
  const time_t us = static_cast<time_t>((ms % 1000) * 1000);
  c.set_connection_timeout(s, us);
  c.set_read_timeout(s, us);
  c.set_write_timeout(s, us);
}

const char* target_name(EtcdCompare::Target t) {
  switch (t) {
    case EtcdCompare::Target::kModRevision: return "MOD";
    case EtcdCompare::Target::kCreateRevision: return "CREATE";
    case EtcdCompare::Target::kVersion: return "VERSION";
    case EtcdCompare::Target::kValue: return "VALUE";
  }
  return "MOD";
}

const char* result_name(EtcdCompare::Result r) {
  switch (r) {
    case EtcdCompare::Result::kEqual: return "EQUAL";
    case EtcdCompare::Result::kNotEqual: return "NOT_EQUAL";
    case EtcdCompare::Result::kGreater: return "GREATER";
    case EtcdCompare::Result::kLess: return "LESS";
  }
  return "EQUAL";
}

json op_json(const EtcdOp& op) {
  json j;
  switch (op.kind) {
    case EtcdOp::Kind::kPut: {
      json p = {{"key", b64(op.key)}, {"value", b64(op.value)}};
      if (op.lease) p["lease"] = std::to_string(op.lease);
      j["request_put"] = p;
      break;
    }
    case EtcdOp::Kind::kDelete: {
      json d = {{"key", b64(op.key)}};
      if (op.prefix) d["range_end"] = b64(etcd_prefix_end(op.key));
      j["request_delete_range"] = d;
      break;
    }
    case EtcdOp::Kind::kRange: {
      json r = {{"key", b64(op.key)}};
      if (op.prefix) r["range_end"] = b64(etcd_prefix_end(op.key));
      j["request_range"] = r;
      break;
    }
  }
  return j;
}

Result<json> parse(const Result<std::string>& text) {
  if (!text.is_ok()) return text.status();
  json j = json::parse(text.value(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return failed("etcd answered with malformed json");
  return j;
}

}  // namespace

std::string etcd_prefix_end(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    const auto c = static_cast<unsigned char>(end.back());
    if (c < 0xff) {
      end.back() = static_cast<char>(c + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key: etcd's "to the end"
}

struct EtcdClient::Conn {
  explicit Conn(const std::string& endpoint, int64_t timeout_ms) : http(with_scheme(endpoint)) {
    set_timeouts(http, timeout_ms);
    http.set_keep_alive(true);
    http.set_tcp_nodelay(true);  // headers and body go in two writes: no 40 ms Nagle stall
  }
  httplib::Client http;
};

EtcdClient::EtcdClient(EtcdOptions options) : options_(std::move(options)) {
  for (const std::string& e : options_.endpoints) conns_.push_back(std::make_unique<Conn>(e, options_.timeout_ms));
}
EtcdClient::~EtcdClient() = default;

Result<std::string> EtcdClient::call(const std::string& path, const std::string& body) {
  std::lock_guard<std::mutex> lock(mu_);
  if (conns_.empty()) return invalid_argument("no etcd endpoints");
  std::string last;
  for (size_t i = 0; i < conns_.size(); ++i) {
    const size_t at = (current_ + i) % conns_.size();
    // Status and body are taken as they arrive: etcd's gateway ends an
    // error answer with HTTP trailers, which the HTTP library reports as a
    // read error after the body is complete.
    int status = 0;
    std::string answer;
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.body = body;
    req.set_header("Content-Type", "application/json");
    req.response_handler = [&](const httplib::Response& r) {
      status = r.status;
      return true;
    };
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      answer.append(data, n);
      return true;
    };
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    const bool ok = conns_[at]->http.send(req, res, err);
    if (status == 0 || (ok == false && status == 200)) {
      last = options_.endpoints[at] + ": " + httplib::to_string(err);
      continue;  // cannot reach this one (or it broke off): try the next
    }
    current_ = at;
    if (status != 200) {
      json j = json::parse(answer, nullptr, false);
      std::string why = answer;
      if (j.is_object() && j.contains("message") && j["message"].is_string()) why = j["message"].get<std::string>();
      return failed("etcd " + path + " status=" + std::to_string(status) + ": " + why);
    }
    return answer;
  }
  return disconnected("no etcd endpoint answered " + path + " (last: " + last + ")");
}

Result<RangeResult> EtcdClient::range(const std::string& key, bool prefix) {
  json req = {{"key", b64(key)}};
  if (prefix) req["range_end"] = b64(etcd_prefix_end(key));
  Result<json> j = parse(call("/v3/kv/range", req.dump()));
  if (!j.is_ok()) return j.status();
  RangeResult out;
  out.revision = i64(j.value()["header"], "revision");
  if (j.value().contains("kvs")) {
    for (const json& kv : j.value()["kvs"]) {
      Result<KeyValue> p = parse_kv(kv);
      if (!p.is_ok()) return p.status();
      out.kvs.push_back(std::move(p.value()));
    }
  }
  return out;
}

Result<int64_t> EtcdClient::put(const std::string& key, const std::string& value, int64_t lease) {
  json req = {{"key", b64(key)}, {"value", b64(value)}};
  if (lease) req["lease"] = std::to_string(lease);
  Result<json> j = parse(call("/v3/kv/put", req.dump()));
  if (!j.is_ok()) return j.status();
  return i64(j.value()["header"], "revision");
}

Result<int64_t> EtcdClient::erase(const std::string& key, bool prefix) {
  json req = {{"key", b64(key)}};
  if (prefix) req["range_end"] = b64(etcd_prefix_end(key));
  Result<json> j = parse(call("/v3/kv/deleterange", req.dump()));
  if (!j.is_ok()) return j.status();
  return i64(j.value()["header"], "revision");
}

Result<TxnResult> EtcdClient::txn(const std::vector<EtcdCompare>& compare, const std::vector<EtcdOp>& success,
                                  const std::vector<EtcdOp>& failure) {
  json req = {{"compare", json::array()}, {"success", json::array()}, {"failure", json::array()}};
  for (const EtcdCompare& c : compare) {
    json cj = {{"key", b64(c.key)}, {"target", target_name(c.target)}, {"result", result_name(c.result)}};
    switch (c.target) {
      case EtcdCompare::Target::kModRevision: cj["mod_revision"] = std::to_string(c.number); break;
      case EtcdCompare::Target::kCreateRevision: cj["create_revision"] = std::to_string(c.number); break;
      case EtcdCompare::Target::kVersion: cj["version"] = std::to_string(c.number); break;
      case EtcdCompare::Target::kValue: cj["value"] = b64(c.value); break;
    }
    req["compare"].push_back(cj);
  }
  for (const EtcdOp& op : success) req["success"].push_back(op_json(op));
  for (const EtcdOp& op : failure) req["failure"].push_back(op_json(op));
  Result<json> j = parse(call("/v3/kv/txn", req.dump()));
  if (!j.is_ok()) return j.status();
  TxnResult out;
  out.revision = i64(j.value()["header"], "revision");
  out.succeeded = j.value().value("succeeded", false);
  if (j.value().contains("responses")) {
    for (const json& r : j.value()["responses"]) {
      if (!r.contains("response_range")) continue;
      std::vector<KeyValue> kvs;
      const json& rr = r["response_range"];
      if (rr.contains("kvs")) {
        for (const json& kv : rr["kvs"]) {
          Result<KeyValue> p = parse_kv(kv);
          if (!p.is_ok()) return p.status();
          kvs.push_back(std::move(p.value()));
        }
      }
      out.ranges.push_back(std::move(kvs));
    }
  }
  return out;
}

Result<int64_t> EtcdClient::grant_lease(int64_t ttl_s) {
  Result<json> j = parse(call("/v3/lease/grant", json{{"TTL", std::to_string(ttl_s)}}.dump()));
  if (!j.is_ok()) return j.status();
  if (j.value().contains("error") && j.value()["error"].is_string() && !j.value()["error"].get<std::string>().empty()) {
    return failed("etcd lease grant: " + j.value()["error"].get<std::string>());
  }
  const int64_t id = i64(j.value(), "ID");
  if (id == 0) return failed("etcd lease grant answered without an id");
  return id;
}

Result<int64_t> EtcdClient::keep_alive(int64_t lease) {
  Result<json> j = parse(call("/v3/lease/keepalive", json{{"ID", std::to_string(lease)}}.dump()));
  if (!j.is_ok()) return j.status();
  if (!j.value().contains("result")) return failed("etcd lease keepalive answered without a result");
  const int64_t ttl = i64(j.value()["result"], "TTL");
  // An expired or unknown lease comes back with no TTL.
  if (ttl <= 0) return failed("etcd lease " + std::to_string(lease) + " has expired");
  return ttl;
}

Status EtcdClient::revoke_lease(int64_t lease) {
  Result<json> j = parse(call("/v3/lease/revoke", json{{"ID", std::to_string(lease)}}.dump()));
  return j.status();
}

// --- the watch ---

EtcdWatch::EtcdWatch(EtcdOptions options, std::string prefix, int64_t start_revision, Callback on_batch)
    : options_(std::move(options)),
      prefix_(std::move(prefix)),
      next_revision_(start_revision),
      on_batch_(std::move(on_batch)) {
  thread_ = std::thread([this] { run(); });
}

EtcdWatch::~EtcdWatch() {
  stop_ = true;
  {
    std::lock_guard<std::mutex> lock(client_mu_);
    if (client_) client_->stop();
  }
  thread_.join();
}

void EtcdWatch::run() {
  size_t at = 0;
  while (!stop_) {
    if (options_.endpoints.empty()) return;
    const std::string& endpoint = options_.endpoints[at % options_.endpoints.size()];
    auto client = std::make_shared<httplib::Client>(with_scheme(endpoint));
    // A quiet stream ends after the read timeout and is reopened, which
    // also notices an endpoint that went away without closing.
    set_timeouts(*client, options_.timeout_ms);
    client->set_tcp_nodelay(true);
    {
      std::lock_guard<std::mutex> lock(client_mu_);
      if (stop_) return;
      client_ = client;
    }
    const json create = {{"create_request",
                          {{"key", b64(prefix_)},
                           {"range_end", b64(etcd_prefix_end(prefix_))},
                           {"start_revision", std::to_string(next_revision_)}}}};
    std::string pending;
    bool restart = false;
    httplib::Request req;
    req.method = "POST";
    req.path = "/v3/watch";
    req.body = create.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      pending.append(data, n);
      for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
        const std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        json j = json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.contains("result")) continue;
        const json& r = j["result"];
        WatchBatch batch;
        const int64_t compact = i64(r, "compact_revision");
        if (compact > 0) {
          batch.compacted = true;
          batch.revision = compact;
        } else if (r.contains("events")) {
          for (const json& e : r["events"]) {
            WatchEvent ev;
            ev.deleted = e.value("type", "PUT") == "DELETE";
            Result<KeyValue> kv = parse_kv(e.value("kv", json::object()));
            if (!kv.is_ok()) continue;  // a malformed event is skipped, not trusted
            ev.kv = std::move(kv.value());
            batch.revision = std::max(batch.revision, ev.kv.mod_revision);
            batch.events.push_back(std::move(ev));
          }
          if (batch.events.empty()) continue;
        } else {
          continue;  // created, progress
        }
        const int64_t resume = on_batch_(batch);
        if (resume > 0) {
          next_revision_ = resume;
          restart = true;
          return false;
        }
        if (!batch.compacted) next_revision_ = batch.revision + 1;
      }
      return !stop_.load();
    };
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    const bool ok = client->send(req, res, err);
    {
      std::lock_guard<std::mutex> lock(client_mu_);
      client_.reset();
    }
    if (stop_ || restart) continue;
    if (!ok && err != httplib::Error::Read) {
      RGPU_DEBUG("etcd watch stream ended endpoint=%s error=%s", endpoint.c_str(), httplib::to_string(err).c_str());
      ++at;  // could not reach it: the next endpoint
      for (int i = 0; i < 10 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

}  // namespace rgpu::pool
