// rgpu-ucx-bench: the wire's own limit, measured with the UCX API alone (no rgpu
// code), configured as rgpu's transport is: active messages, a multi-thread
// worker, peer error handling, the same UCX defaults. A forked server process
// answers; both sides busy-poll. Results are JSON (see benchmarks/README.md).
//
//   rgpu-ucx-bench latency   [--size BYTES] [--iters N] [--warmup N]
//   rgpu-ucx-bench bandwidth [--sizes A,B,...] [--reps N]
//   common: [--json FILE] [--smoke]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"

namespace {

using rgpu::bench::Json;
using Clock = std::chrono::steady_clock;

enum AmId : unsigned { kPing = 1, kPong = 2, kPush = 3, kAck = 4, kPullRequest = 5, kPullData = 6 };

struct Request {  // header of kPullRequest
  uint64_t size;
};

// Everything one side owns. Single-threaded: the busy-polling loop runs all.
struct Side {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_ep_h ep = nullptr;
  ucp_listener_h listener = nullptr;
  std::vector<char> buffer;  // registered bulk buffer
  ucp_mem_h memh = nullptr;
  int pongs = 0;             // client: pongs / acks / pulled data seen
  int pending_recv = 0;      // rendezvous receives under way
  bool peer_gone = false;
  std::vector<char> header;  // latency header to send back
};

void die(const char* what, ucs_status_t st) {
  std::fprintf(stderr, "rgpu-ucx-bench: %s: %s\n", what, ucs_status_string(st));
  std::exit(1);
}

void wait_request(Side& s, ucs_status_ptr_t req) {
  if (req == nullptr) return;
  if (UCS_PTR_IS_ERR(req)) die("request", UCS_PTR_STATUS(req));
  while (ucp_request_check_status(req) == UCS_INPROGRESS) ucp_worker_progress(s.worker);
  ucp_request_free(req);
}

void send_am(Side& s, unsigned id, const void* header, size_t header_len, const void* data, size_t len) {
  ucp_request_param_t p{};
  if (len != 0 && s.memh != nullptr) {
    p.op_attr_mask = UCP_OP_ATTR_FIELD_MEMH;
    p.memh = s.memh;
  }
  wait_request(s, ucp_am_send_nbx(s.ep, id, header, header_len, data, len, &p));
}

void recv_done(void* request, ucs_status_t status, size_t, void* user) {
  auto* s = static_cast<Side*>(user);
  if (status != UCS_OK) die("receive", status);
  --s->pending_recv;
  ucp_request_free(request);
}

// Receives an AM's data into the registered buffer (eager: copied; rendezvous: pulled).
void take_data(Side& s, void* data, size_t length, const ucp_am_recv_param_t* param) {
  if (length > s.buffer.size()) s.buffer.resize(length);  // not hit: buffers are sized first
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) == 0) {
    std::memcpy(s.buffer.data(), data, length);
    return;
  }
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
  p.cb.recv_am = recv_done;
  p.user_data = &s;
  p.memh = s.memh;
  ++s.pending_recv;
  ucs_status_ptr_t req = ucp_am_recv_data_nbx(s.worker, data, s.buffer.data(), length, &p);
  if (req == nullptr) {
    --s.pending_recv;
  } else if (UCS_PTR_IS_ERR(req)) {
    die("ucp_am_recv_data_nbx", UCS_PTR_STATUS(req));
  }
}

ucs_status_t on_am(void* arg, const void* header, size_t header_len, void* data, size_t length,
                   const ucp_am_recv_param_t* param);

void set_handler(Side& s, unsigned id) {
  ucp_am_handler_param_t hp{};
  hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG |
                  UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  hp.id = id;
  hp.cb = on_am;
  hp.arg = &s;
  hp.flags = UCP_AM_FLAG_WHOLE_MSG;
  ucs_status_t st = ucp_worker_set_am_recv_handler(s.worker, &hp);
  if (st != UCS_OK) die("ucp_worker_set_am_recv_handler", st);
}

// Deferred work of the server, run from the main loop (not inside callbacks).
struct Pending {
  enum { kNone, kPong, kAck, kPull } what = kNone;
  uint64_t size = 0;
};
Pending g_pending;

ucs_status_t on_am(void* arg, const void* header, size_t header_len, void* data, size_t length,
                   const ucp_am_recv_param_t* param) {
  auto& s = *static_cast<Side*>(arg);
  // The id is not passed to the callback; headers carry a one-byte tag.
  const char tag = header_len > 0 ? static_cast<const char*>(header)[0] : 0;
  switch (tag) {
    case 'p':  // ping (server)
      s.header.assign(static_cast<const char*>(header), static_cast<const char*>(header) + header_len);
      g_pending.what = Pending::kPong;
      return UCS_OK;
    case 'P':  // pong (client)
      ++s.pongs;
      return UCS_OK;
    case 'u':  // pushed data (server): take it, then ack
      take_data(s, data, length, param);
      g_pending.what = Pending::kAck;
      return UCS_OK;
    case 'a':  // ack (client)
      ++s.pongs;
      return UCS_OK;
    case 'r':  // pull request (server)
      if (header_len >= 1 + sizeof(Request)) {
        Request r;
        std::memcpy(&r, static_cast<const char*>(header) + 1, sizeof r);
        g_pending.what = Pending::kPull;
        g_pending.size = r.size;
      }
      return UCS_OK;
    case 'd':  // pulled data (client)
      take_data(s, data, length, param);
      ++s.pongs;
      return UCS_OK;
    default:
      return UCS_OK;
  }
}

void ep_error(void* arg, ucp_ep_h, ucs_status_t) { static_cast<Side*>(arg)->peer_gone = true; }

void setup(Side& s, size_t buffer_bytes) {
  rgpu::bench::apply_rgpu_ucx_defaults();
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) die("ucp_config_read", st);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_AM;
  st = ucp_init(&params, config, &s.context);
  ucp_config_release(config);
  if (st != UCS_OK) die("ucp_init", st);
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_MULTI;  // as rgpu's transport
  st = ucp_worker_create(s.context, &wp, &s.worker);
  if (st != UCS_OK) die("ucp_worker_create", st);
  for (unsigned id : {kPing, kPong, kPush, kAck, kPullRequest, kPullData}) set_handler(s, id);
  s.buffer.assign(std::max<size_t>(buffer_bytes, 4096), 1);
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  mp.address = s.buffer.data();
  mp.length = s.buffer.size();
  st = ucp_mem_map(s.context, &mp, &s.memh);
  if (st != UCS_OK) die("ucp_mem_map", st);
}

void conn_handler(ucp_conn_request_h request, void* arg) {
  auto& s = *static_cast<Side*>(arg);
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                 UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  p.conn_request = request;
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = ep_error;
  p.err_handler.arg = &s;
  ucs_status_t st = ucp_ep_create(s.worker, &p, &s.ep);
  if (st != UCS_OK) die("ucp_ep_create (server)", st);
}

[[noreturn]] void run_server(int port_pipe, size_t buffer_bytes) {
  Side s;
  setup(s, buffer_bytes);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ucp_listener_params_t lp{};
  lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  lp.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  lp.sockaddr.addrlen = sizeof addr;
  lp.conn_handler.cb = conn_handler;
  lp.conn_handler.arg = &s;
  ucs_status_t st = ucp_listener_create(s.worker, &lp, &s.listener);
  if (st != UCS_OK) die("ucp_listener_create", st);
  ucp_listener_attr_t la{};
  la.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  ucp_listener_query(s.listener, &la);
  const uint16_t port = ntohs(reinterpret_cast<const sockaddr_in*>(&la.sockaddr)->sin_port);
  if (write(port_pipe, &port, sizeof port) != sizeof port) _exit(1);
  close(port_pipe);
  // Busy-poll until the client goes (or 10 minutes, a bound).
  const auto deadline = Clock::now() + std::chrono::minutes(10);
  bool connected = false;
  for (unsigned n = 0;; ++n) {
    ucp_worker_progress(s.worker);
    if (s.ep != nullptr) connected = true;
    if (g_pending.what != Pending::kNone && s.pending_recv == 0) {
      const Pending job = g_pending;
      g_pending = {};
      if (job.what == Pending::kPong) {
        s.header[0] = 'P';
        send_am(s, kPong, s.header.data(), s.header.size(), nullptr, 0);
      } else if (job.what == Pending::kAck) {
        const char a = 'a';
        send_am(s, kAck, &a, 1, nullptr, 0);
      } else if (job.what == Pending::kPull) {
        const char d = 'd';
        send_am(s, kPullData, &d, 1, s.buffer.data(), std::min<uint64_t>(job.size, s.buffer.size()));
      }
    }
    if ((connected && s.peer_gone) || ((n & 0xffff) == 0 && Clock::now() > deadline)) break;
  }
  _exit(0);
}

struct Client {
  Side s;
  pid_t server = -1;

  void start(size_t buffer_bytes) {
    int fds[2];
    if (pipe(fds) != 0) std::exit(1);
    server = fork();
    if (server == 0) {
      close(fds[0]);
      run_server(fds[1], buffer_bytes);
    }
    close(fds[1]);
    uint16_t port = 0;
    if (read(fds[0], &port, sizeof port) != sizeof port) {
      std::fprintf(stderr, "rgpu-ucx-bench: the server did not start\n");
      std::exit(1);
    }
    close(fds[0]);
    setup(s, buffer_bytes);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    ucp_ep_params_t p{};
    p.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                   UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    p.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    p.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
    p.sockaddr.addrlen = sizeof addr;
    p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    p.err_handler.cb = ep_error;
    p.err_handler.arg = &s;
    ucs_status_t st = ucp_ep_create(s.worker, &p, &s.ep);
    if (st != UCS_OK) die("ucp_ep_create (client)", st);
  }

  // Waits (busy) until `count` answers arrived.
  void wait_answers(int count) {
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    for (unsigned n = 0; s.pongs < count || s.pending_recv > 0; ++n) {
      ucp_worker_progress(s.worker);
      if (s.peer_gone || ((n & 0xffff) == 0 && Clock::now() > deadline)) {
        std::fprintf(stderr, "rgpu-ucx-bench: the server stopped answering\n");
        std::exit(1);
      }
    }
  }

  void stop() {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    wait_request(s, ucp_ep_close_nbx(s.ep, &p));
    int status = 0;
    for (int i = 0; i < 200 && waitpid(server, &status, WNOHANG) == 0; ++i) usleep(10000);
    kill(server, SIGKILL);
    waitpid(server, &status, 0);
  }
};

int latency(const rgpu::bench::Args& args) {
  const size_t size = std::max<size_t>(args.size("--size", 128), 1);
  const int iters = args.smoke ? 200 : static_cast<int>(args.size("--iters", 20000));
  const int warmup = args.smoke ? 20 : static_cast<int>(args.size("--warmup", 2000));
  Client c;
  c.start(4096);
  std::vector<char> header(size, 'x');
  header[0] = 'p';
  std::vector<double> us;
  us.reserve(iters);
  for (int i = 0; i < warmup + iters; ++i) {
    const auto t0 = Clock::now();
    send_am(c.s, kPing, header.data(), header.size(), nullptr, 0);
    c.wait_answers(i + 1);
    if (i >= warmup) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  c.stop();
  Json j;
  j.add("tool", "ucx-raw").add("mode", "latency").add("ucx_tls", rgpu::bench::ucx_tls()).add("size", size);
  j.add("iters", static_cast<uint64_t>(iters));
  rgpu::bench::add_percentiles(j, us);
  return args.emit(j);
}

int bandwidth(const rgpu::bench::Args& args) {
  const std::vector<size_t> sizes = args.sizes();
  const int reps = args.smoke ? 2 : static_cast<int>(args.size("--reps", 5));
  const size_t biggest = *std::max_element(sizes.begin(), sizes.end());
  Client c;
  c.start(biggest);
  int answers = 0;
  Json j;
  j.add("tool", "ucx-raw").add("mode", "bandwidth").add("ucx_tls", rgpu::bench::ucx_tls());
  j.add("statistic", "median of " + std::to_string(reps) + " transfers after one warm-up");
  std::vector<Json> points;
  for (size_t size : sizes) {
    for (const char* dir : {"htod", "dtoh"}) {
      std::vector<double> seconds;
      for (int r = 0; r <= reps; ++r) {
        const auto t0 = Clock::now();
        if (dir[0] == 'h') {  // client → server, as a host-to-device copy travels
          const char u = 'u';
          send_am(c.s, kPush, &u, 1, c.s.buffer.data(), size);
        } else {  // server → client
          char req[1 + sizeof(Request)];
          req[0] = 'r';
          const Request rq{size};
          std::memcpy(req + 1, &rq, sizeof rq);
          send_am(c.s, kPullRequest, req, sizeof req, nullptr, 0);
        }
        c.wait_answers(++answers);
        if (r > 0) seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
      Json p;
      p.add("size", size).add("direction", dir).add("mb_per_s", size / rgpu::bench::median(seconds) / 1e6);
      points.push_back(p);
    }
  }
  c.stop();
  j.add_array("points", points);
  return args.emit(j);
}

}  // namespace

int main(int argc, char** argv) {
  rgpu::bench::Args args(argc, argv);
  if (args.mode == "latency") return latency(args);
  if (args.mode == "bandwidth") return bandwidth(args);
  std::fprintf(stderr,
               "usage: rgpu-ucx-bench latency|bandwidth [--size BYTES] [--iters N] [--warmup N]\n"
               "                      [--sizes A,B,...] [--reps N] [--json FILE] [--smoke]\n");
  return 2;
}
