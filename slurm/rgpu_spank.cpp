// rgpu_spank.so: rgpu's devices for Slurm jobs (docs/slurm.md).
//
//   srun --rgpu=N[,mem=SIZE][,share=F][,kind=K] PROGRAM
//
// Each task of a step gets a lease of N devices from rgpu-pool, asked when
// the step starts and held for its life by one `rgpu pool hold` process per
// step (its line protocol: tools/src/pool_hold.cpp); the tasks run with
// rgpu's client library preloaded, RGPU_SERVER and their own RGPU_LEASE.
// The step's end (or its cancellation) closes the helper's standard input,
// which releases the leases; a node that vanishes is covered by the lease's
// expiry in the pool. In srun, sbatch and salloc the plugin checks the
// option and hands it to slurmctld (the job control environment), where
// slurm/job_submit.lua turns it into the `rgpu` license, so that
// jobs wait in Slurm's queue for devices the pool has.
//
// plugstack.conf arguments: pool=HOST:PORT (required), rgpu=PATH (the rgpu
// command; default /usr/bin/rgpu), kind=nvidia|cpu|any (default kind),
// timeout=SECONDS (longest wait for the leases; default 300),
// priority=low|normal|high|N (default normal), qos=NAME:P[;NAME:P...]
// (priority by the job's QOS).
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
// spank.h declares the plugin's hooks outside its own extern "C" block.
extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rgpu/common/request_text.h"

// The loader finds the plugin by these symbols (what SPANK_PLUGIN declares
// in C; C++ needs them extern by hand).
extern "C" {
extern const char plugin_name[] = "rgpu";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
}

namespace {

// --rgpu=N[,mem=SIZE][,share=F][,kind=K], checked.
struct Ask {
  bool given = false;
  std::string text;  // as the user wrote it
  unsigned devices = 0;
  std::string mem, share, kind;
};

struct Settings {
  std::string pool;
  std::string rgpu = "/usr/bin/rgpu";
  std::string kind;
  std::string timeout = "300";
  std::string priority;
  std::string qos;  // NAME:P;NAME:P
};

Ask g_ask;
Settings g_settings;

// The step's helper and what it gave each task; or why the step has no
// leases (its tasks then fail: a failed user_init would let srun exit 0).
pid_t g_holder = -1;
bool g_no_leases = false;
int g_holder_stdin = -1;
std::vector<std::pair<std::string, std::string>> g_set;      // for every task
std::vector<std::pair<std::string, std::string>> g_prepend;  // put before the task's own value
std::vector<std::vector<std::pair<std::string, std::string>>> g_task;

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

bool whole(const std::string& s, unsigned max, unsigned* out) {
  if (s.empty() || s.size() > 9) return false;
  unsigned v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v == 0 || v > max) return false;
  *out = v;
  return true;
}

bool kind_text(const std::string& s) { return s == "nvidia" || s == "cpu" || s == "any"; }

// Parses --rgpu's value into *ask, or says why not in *why.
bool parse_ask(const std::string& text, Ask* ask, std::string* why) {
  if (text.size() > 256) {
    *why = "the value is too long";
    return false;
  }
  const auto items = split(text, ',');
  if (!whole(items[0], 64, &ask->devices)) {
    *why = "'" + items[0] + "' is not a device count from 1 to 64";
    return false;
  }
  for (size_t i = 1; i < items.size(); ++i) {
    const std::string& item = items[i];
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    std::string* slot = key == "mem" ? &ask->mem : key == "share" ? &ask->share : key == "kind" ? &ask->kind : nullptr;
    if (slot == nullptr || eq == std::string::npos) {
      *why = "unknown item '" + item + "' (mem=SIZE, share=F, kind=K)";
      return false;
    }
    if (!slot->empty()) {
      *why = key + " given twice";
      return false;
    }
    // Sizes and shares are read by rgpu's own parsers (request_text.h), so
    // what passes here is what `rgpu pool hold` will take.
    if (key == "mem") {
      if (auto size = rgpu::parse_size(value); !size.is_ok()) {
        *why = "mem=" + value + ": " + size.status().message();
        return false;
      }
    } else if (key == "share") {
      if (auto share = rgpu::parse_share(value); !share.is_ok()) {
        *why = "share=" + value + ": " + share.status().message();
        return false;
      }
    } else if (!kind_text(value)) {
      *why = "kind=" + value + " is not nvidia, cpu or any";
      return false;
    }
    *slot = value;
  }
  ask->text = text;
  ask->given = true;
  return true;
}

int on_option(int, const char* optarg, int) {
  std::string why;
  Ask ask;
  if (optarg == nullptr || !parse_ask(optarg, &ask, &why)) {
    slurm_error("--rgpu=%s: %s", optarg ? optarg : "", why.empty() ? "a value is needed" : why.c_str());
    return -1;
  }
  g_ask = ask;
  return 0;
}

struct spank_option g_option = {
    const_cast<char*>("rgpu"), const_cast<char*>("N[,mem=SIZE][,share=F][,kind=K]"),
    const_cast<char*>("N devices from rgpu's pool for each task (rgpu_spank.so, docs/slurm.md)"), 1, 0, on_option};

bool parse_settings(int ac, char** av) {
  for (int i = 0; i < ac; ++i) {
    const std::string arg = av[i];
    const size_t eq = arg.find('=');
    const std::string key = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    std::string* slot = key == "pool"       ? &g_settings.pool
                        : key == "rgpu"     ? &g_settings.rgpu
                        : key == "kind"     ? &g_settings.kind
                        : key == "timeout"  ? &g_settings.timeout
                        : key == "priority" ? &g_settings.priority
                        : key == "qos"      ? &g_settings.qos
                                            : nullptr;
    if (slot == nullptr || value.empty()) {
      slurm_error("rgpu_spank: plugstack.conf argument '%s' is not pool=, rgpu=, kind=, timeout=, priority= or qos=",
                  arg.c_str());
      return false;
    }
    *slot = value;
  }
  if (!g_settings.kind.empty() && !kind_text(g_settings.kind)) {
    slurm_error("rgpu_spank: kind=%s is not nvidia, cpu or any", g_settings.kind.c_str());
    return false;
  }
  return true;
}

std::string job_env(spank_t sp, const char* name) {
  char buf[1024];
  if (spank_getenv(sp, name, buf, sizeof buf) != ESPANK_SUCCESS) return "";
  return buf;
}

// The pool's priority for the job: by its QOS where qos= names it, else
// priority=, else the pool's default.
std::string priority_for(spank_t sp) {
  const std::string qos = job_env(sp, "SLURM_JOB_QOS");
  if (!qos.empty()) {
    for (const std::string& pair : split(g_settings.qos, ';')) {
      const size_t colon = pair.find(':');
      if (colon != std::string::npos && pair.substr(0, colon) == qos) return pair.substr(colon + 1);
    }
  }
  return g_settings.priority;
}

// The tenant the leases are for: RGPU_TENANT when the job sets it (its key
// file then proves it), else the job's account, else its user.
std::string tenant_for(spank_t sp) {
  std::string tenant = job_env(sp, "RGPU_TENANT");
  if (tenant.empty()) tenant = job_env(sp, "SLURM_JOB_ACCOUNT");
  if (tenant.empty()) {
    uid_t uid = 0;
    if (spank_get_item(sp, S_JOB_UID, &uid) == ESPANK_SUCCESS) {
      if (struct passwd* pw = getpwuid(uid)) tenant = pw->pw_name;
    }
  }
  return tenant;
}

void stop_holder() {
  if (g_holder_stdin >= 0) close(g_holder_stdin);  // the helper releases and exits
  g_holder_stdin = -1;
  if (g_holder <= 0) return;
  for (int i = 0; i < 50; ++i) {  // 5 s, then it is killed
    const pid_t done = waitpid(g_holder, nullptr, WNOHANG);
    // ECHILD: slurmstepd reaped it already; the pid may be another's now.
    if (done == g_holder || (done < 0 && errno == ECHILD)) {
      g_holder = -1;
      return;
    }
    usleep(100000);
  }
  kill(g_holder, SIGKILL);
  waitpid(g_holder, nullptr, 0);
  g_holder = -1;
}

// Starts `rgpu pool hold` for `tasks` leases and reads its answer; -1, with
// the reason logged for the job's output, when there are none.
int hold_leases(spank_t sp, uint32_t tasks, uint32_t job, uint32_t step) {
  std::vector<std::string> args = {g_settings.rgpu,
                                   "pool",
                                   "hold",
                                   "--pool",
                                   g_settings.pool,
                                   "--leases",
                                   std::to_string(tasks),
                                   "--gpus",
                                   std::to_string(g_ask.devices),
                                   "--timeout",
                                   g_settings.timeout,
                                   "--program",
                                   "slurm job " + std::to_string(job) + " step " + std::to_string(step)};
  auto add = [&](const char* flag, const std::string& value) {
    if (value.empty()) return;
    args.push_back(flag);
    args.push_back(value);
  };
  add("--mem", g_ask.mem);
  add("--share", g_ask.share);
  add("--kind", !g_ask.kind.empty() ? g_ask.kind : g_settings.kind);
  add("--priority", priority_for(sp));
  add("--tenant", tenant_for(sp));

  // The helper runs with the job's environment (the user's key file,
  // UCX settings), as the job's user.
  char** env = nullptr;
  if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS) env = nullptr;
  uid_t uid = geteuid();
  gid_t gid = getegid();
  int out[2], in[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    slurm_error("rgpu: pipe: %s", std::strerror(errno));
    return -1;
  }
  if (pipe2(in, O_CLOEXEC) != 0) {
    slurm_error("rgpu: pipe: %s", std::strerror(errno));
    close(out[0]);
    close(out[1]);
    return -1;
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    slurm_error("rgpu: fork: %s", std::strerror(errno));
    return -1;
  }
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    const int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 2);
    for (int fd = 3; fd < 4096; ++fd) close(fd);
    if (setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0) _exit(126);
    static char* empty[] = {nullptr};
    execve(argv[0], argv.data(), env != nullptr ? env : empty);
    std::printf("error cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  g_holder = pid;
  g_holder_stdin = in[1];

  FILE* from = fdopen(out[0], "r");
  std::string error;
  bool ready = false;
  g_task.assign(tasks, {});
  char line[16384];
  while (!ready && from != nullptr && std::fgets(line, sizeof line, from) != nullptr) {
    std::string l(line);
    while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
    // NAME=VALUE, the value with \\ and \n written for a backslash and a
    // line break (a lease token has several lines).
    auto name_value = [](const std::string& nv) {
      const size_t eq = nv.find('=');
      std::string value;
      for (size_t i = eq == std::string::npos ? nv.size() : eq + 1; i < nv.size(); ++i) {
        if (nv[i] == '\\' && i + 1 < nv.size()) {
          ++i;
          value += nv[i] == 'n' ? '\n' : nv[i];
        } else {
          value += nv[i];
        }
      }
      return std::make_pair(nv.substr(0, eq), value);
    };
    if (l == "ready") {
      ready = true;
    } else if (l.rfind("error ", 0) == 0) {
      error = l.substr(6);
    } else if (l.rfind("waiting ", 0) == 0) {
      slurm_info("rgpu: job %u step %u waits: %s", job, step, l.c_str() + 8);
    } else if (l.rfind("set ", 0) == 0) {
      g_set.push_back(name_value(l.substr(4)));
    } else if (l.rfind("prepend ", 0) == 0) {
      g_prepend.push_back(name_value(l.substr(8)));
    } else if (l.rfind("task ", 0) == 0) {
      char* end = nullptr;
      const unsigned long t = std::strtoul(l.c_str() + 5, &end, 10);
      if (end != l.c_str() + 5 && *end == ' ' && t < tasks) g_task[t].push_back(name_value(end + 1));
    }
  }
  if (from != nullptr) std::fclose(from);
  else close(out[0]);
  if (!ready) {
    stop_holder();
    slurm_error("rgpu: no devices for job %u step %u: %s", job, step,
                error.empty() ? "rgpu pool hold ended without leases" : error.c_str());
    return -1;
  }
  for (const auto& [name, value] : g_set) spank_setenv(sp, name.c_str(), value.c_str(), 1);
  for (const auto& [name, value] : g_prepend) {
    const std::string old = job_env(sp, name.c_str());
    spank_setenv(sp, name.c_str(), (old.empty() ? value : value + ":" + old).c_str(), 1);
  }
  return 0;
}

}  // namespace

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
  if (!parse_settings(ac, av)) return -1;
  if (spank_option_register(sp, &g_option) != ESPANK_SUCCESS) return -1;
  return 0;
}

// In srun, sbatch and salloc: the checked option, for job_submit.lua (it
// sees it as SPANK_RGPU in the job's spank_job_env).
extern "C" int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  const spank_context_t ctx = spank_context();
  if (!g_ask.given || (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR)) return 0;
  if (g_settings.pool.empty()) {
    slurm_error("--rgpu: rgpu_spank has no pool= in plugstack.conf");
    return -1;
  }
  if (spank_job_control_setenv(sp, "RGPU", g_ask.text.c_str(), 1) != ESPANK_SUCCESS) {
    slurm_error("--rgpu: cannot pass the option to slurmctld");
    return -1;
  }
  return 0;
}

// In slurmstepd, once per step, as the job's user: the leases.
extern "C" int slurm_spank_user_init(spank_t sp, int, char**) {
  if (!g_ask.given || !spank_remote(sp)) return 0;
  uint32_t job = 0, step = 0, tasks = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &tasks) != ESPANK_SUCCESS) {
    slurm_error("rgpu: cannot read the step's ids");
    g_no_leases = true;
    return 0;
  }
  // A batch script's steps (srun inside it) hold the leases, not the script
  // itself, and the extern step runs no program.
  if (step == SLURM_BATCH_SCRIPT || step == SLURM_EXTERN_CONT || tasks == 0) return 0;
  if (g_settings.pool.empty()) {
    slurm_error("rgpu: rgpu_spank has no pool= in plugstack.conf");
    g_no_leases = true;
    return 0;
  }
  // A failure fails the step's tasks (slurm_spank_task_init), not
  // user_init: srun would exit 0 after a failed user_init.
  g_no_leases = hold_leases(sp, tasks, job, step) != 0;
  return 0;
}

// In each task, just before it runs: its own lease, for this process alone.
extern "C" int slurm_spank_task_init(spank_t sp, int, char**) {
  if (g_no_leases) return -1;  // the task exits with 1; user_init said why
  if (g_holder <= 0) return 0;
  int task = -1;
  if (spank_get_item(sp, S_TASK_ID, &task) != ESPANK_SUCCESS || task < 0 ||
      static_cast<size_t>(task) >= g_task.size()) {
    slurm_error("rgpu: no lease for this task");
    return -1;
  }
  for (const auto& [name, value] : g_task[static_cast<size_t>(task)]) spank_setenv(sp, name.c_str(), value.c_str(), 1);
  spank_setenv(sp, "RGPU_LEASE_PID", std::to_string(getpid()).c_str(), 1);  // exec keeps the pid
  return 0;
}

extern "C" int slurm_spank_exit(spank_t sp, int, char**) {
  if (spank_remote(sp)) stop_holder();
  return 0;
}
