// rgpu session list / end: an rgpud's sessions, one line each, and ending
// one, asked with the server's admin key (RGPU_ADMIN_KEY_FILE).
#include "session_cli.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "connection.h"
#include "rgpu/common/cli.h"
#include "rgpu/common/log.h"
#include "rgpu/protocol/auth.h"
#include "text.h"

namespace rgpu::tools {
namespace {

constexpr const char* kUsage =
    "usage: rgpu session list [--server HOST:PORT] [--timeout S] [--json]\n"
    "       rgpu session end SESSION [--server HOST:PORT] [--timeout S]\n";

// id, tenant, devices, memory held, age, then who runs it and its calls.
std::string session_line(const protocol::SessionSummary& s) {
  std::string devices;
  for (uint32_t d : s.devices) devices += (devices.empty() ? "" : ",") + std::to_string(d);
  if (devices.empty()) devices = "-";
  char line[512];
  std::snprintf(line, sizeof line, "%-6llu %-16s %-8s %10s %8s  %s@%s:%u calls=%llu",
                static_cast<unsigned long long>(s.id), printable(s.tenant).c_str(), devices.c_str(),
                human_bytes(static_cast<double>(s.memory_bytes)).c_str(), human_age(s.age_ms).c_str(),
                printable(s.program).c_str(), printable(s.hostname).c_str(), s.pid,
                static_cast<unsigned long long>(s.calls));
  std::string out = line;
  if (s.lease != 0) out += " lease=" + std::to_string(s.lease);
  return out;
}

// The options every operator command takes: the server and how long to wait.
struct Target {
  std::string server;
  uint64_t timeout_s = 5;
};

// Parses `argv` (argv[0] the subcommand); -1 to go on, else the exit code
// (help, version, a bad option).
int parse(const std::string& name, const std::string& usage, const std::string& about, int argc, char** argv,
          Target* target, bool* json = nullptr) {
  const char* env_server = std::getenv("RGPU_SERVER");
  if (env_server != nullptr) target->server = env_server;
  cli::Parser parser("rgpu session " + name, usage, about);
  parser.add(cli::text("--server", "HOST:PORT", "the rgpud to ask (default: RGPU_SERVER)", &target->server))
      .add(cli::number("--timeout", "S", "give up after S seconds (default 5)", 1, 3600,
                       [target](uint64_t v) { target->timeout_s = v; }));
  if (json != nullptr) {
    parser.add(cli::flag("--json", "print a JSON array of the sessions, one object each, every field named", json));
  }
  return parser.parse_or_answer(argc, argv, std::string("rgpu ") + RGPU_VERSION_STRING);
}

// Sends `request` to the target with the admin key; the sessions of the
// answer, or why not (already worded for the user).
Result<std::vector<protocol::SessionSummary>> ask(const Target& target, const protocol::AdminRequest& request) {
  if (target.server.empty()) return invalid_argument("which server? give --server HOST:PORT (or set RGPU_SERVER)");
  if (target.server.find(',') != std::string::npos) {
    return invalid_argument("one server at a time, got '" + target.server + "'");
  }
  const char* key_file = std::getenv("RGPU_ADMIN_KEY_FILE");
  if (key_file == nullptr || *key_file == '\0') {
    return invalid_argument("operator requests prove the server's admin key: set RGPU_ADMIN_KEY_FILE to a private "
                            "file holding it (rgpud --admin-key-file)");
  }
  auto key = protocol::auth::read_key_file(key_file);
  if (!key.is_ok()) return invalid_argument("RGPU_ADMIN_KEY_FILE: " + key.status().message());
  auto transport = transport::make_ucx_transport();
  if (!transport.is_ok()) return transport.status();
  shim::ConnectionOptions options;
  options.server = target.server;
  options.auth_token = key.value();
  options.admin = request;
  options.connect_timeout = std::chrono::seconds(target.timeout_s);
  auto connection = shim::Connection::open(options, std::move(transport.value()), {});
  if (!connection.is_ok()) return connection.status();
  return connection.value()->session().listed;
}

int fail(const std::string& command, const Status& why) {
  std::fprintf(stderr, "rgpu session %s: %s\n", command.c_str(), why.message().c_str());
  return 1;
}

// The sessions as a JSON array, for scripts (`rgpu session list --json`).
std::string sessions_json(const std::vector<protocol::SessionSummary>& sessions) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : sessions) {
    out.push_back({{"id", s.id},
                   {"tenant", s.tenant},
                   {"devices", s.devices},
                   {"memory_bytes", s.memory_bytes},
                   {"age_ms", s.age_ms},
                   {"program", s.program},
                   {"host", s.hostname},
                   {"pid", s.pid},
                   {"calls", s.calls},
                   {"lease", s.lease}});
  }
  // Texts from clients may hold any bytes: replaced, never an exception.
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

int list(int argc, char** argv) {
  Target target;
  bool json = false;
  const int done = parse("list", "[--server HOST:PORT] [--timeout S] [--json]",
                         "Prints one line per session of the server: its id, tenant, devices (the server's "
                         "ordinals), device memory held, age, then program@host:pid, its calls and its pool lease. "
                         "The request proves the server's admin key (rgpud --admin-key-file), read from the "
                         "private file RGPU_ADMIN_KEY_FILE names.",
                         argc, argv, &target, &json);
  if (done >= 0) return done;
  auto sessions = ask(target, {protocol::AdminCommand::kListSessions, 0});
  if (!sessions.is_ok()) return fail("list", sessions.status());
  if (json) {
    std::printf("%s\n", sessions_json(sessions.value()).c_str());
    return 0;
  }
  for (const auto& s : sessions.value()) std::printf("%s\n", session_line(s).c_str());
  return 0;
}

int end(int argc, char** argv) {
  Target target;
  std::string id_text;
  if (argc > 1 && argv[1][0] != '-') {  // the session first, options after
    id_text = argv[1];
    argv[1] = argv[0];
    --argc;
    ++argv;
  }
  const int done = parse("end", "SESSION [--server HOST:PORT] [--timeout S]",
                         "Ends session SESSION (an id from rgpu session list): its program's next call fails, "
                         "and rgpud frees everything it held. Prints the session as it was. Proves the admin key "
                         "as rgpu session list does.",
                         argc, argv, &target);
  if (done >= 0) return done;
  uint64_t id = 0;
  if (!cli::parse_u64(id_text, &id)) {
    std::fprintf(stderr, "rgpu session end: which session? give its id (rgpu session list), got '%s'\n",
                 id_text.c_str());
    return 2;
  }
  auto ended = ask(target, {protocol::AdminCommand::kEndSession, id});
  if (!ended.is_ok()) return fail("end", ended.status());
  for (const auto& s : ended.value()) std::printf("ended %s\n", session_line(s).c_str());
  return 0;
}

}  // namespace

int session_command(int argc, char** argv) {
  const std::string sub = argc > 0 ? argv[0] : "";
  if (sub == "list") return list(argc, argv);
  if (sub == "end") return end(argc, argv);
  if (sub == "--help" || sub == "-h" || sub == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fputs(kUsage, stderr);
  return 2;
}

}  // namespace rgpu::tools
