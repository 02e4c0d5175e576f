// rgpu's pool commands: `rgpu run --pool ...` (a lease from rgpu-pool for
// the command) and `rgpu pool status`. rgpu.cpp hooks them in.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rgpu/pool/client.h"

namespace rgpu::tools {

// The pool options of `rgpu run` and the lease they get. Holding the object
// holds the lease: it is released when the object goes.
class PoolRun {
 public:
  // When argv[*i] is a pool option (--pool, --kind, --min-cc, --priority,
  // --tenant, --timeout), consumes it and its value and returns true; a bad
  // value sets *error.
  bool take(int argc, char** argv, int* i, std::string* error);
  // Whether the command runs through a pool: --pool, or RGPU_POOL set.
  bool active() const;
  // Asks the pool for the devices of `request_text` (RGPU_REQUEST's form,
  // from --gpus/--mem/--share; empty: RGPU_REQUEST), waiting in its queue
  // with a progress line on stderr. On success the servers to use
  // (RGPU_SERVER) and the lease (RGPU_LEASE) are set; on failure a message
  // was printed and the exit code is returned.
  int acquire(const std::string& request_text, const std::string& program);
  // One lease as acquire() asks for it, into *out, leaving this object's
  // lease alone (`rgpu pool hold` holds several). Returns 0, or the exit
  // code (2: refused or bad input, 3: timed out) with *error set.
  int lease(const std::string& request_text, const std::string& program,
            const std::function<void(const pool::client::QueueNotice&)>& on_queued, pool::client::Held* out,
            std::string* error) const;
  const std::string& servers() const { return servers_; }
  const std::string& lease() const { return held_ ? held_->token : empty_; }
  // In the child about to run COMMAND: the lease for this process alone
  // (RGPU_LEASE_PID), and the pool and this request's settings for any
  // process it starts, which asks the pool for a lease of its own.
  void export_for_child() const;
  // The pool and the request's settings that a process started with a
  // lease passes on, so that its own children ask the pool (RGPU_POOL,
  // RGPU_POOL_KIND, ...), as name and value.
  std::vector<std::pair<std::string, std::string>> settings_for_children() const;

 private:
  std::string pool_;
  std::string kind_, min_cc_, priority_, tenant_, timeout_;
  std::optional<pool::client::Held> held_;
  std::string servers_;
  const std::string empty_;
};

// `rgpu pool SUBCOMMAND ...`: status, hold, slurm-licenses. Returns the exit code.
int pool_command(int argc, char** argv);
// `rgpu pool hold` and `rgpu pool slurm-licenses` (pool_hold.cpp,
// docs/slurm.md).
int hold_command(int argc, char** argv);
int slurm_licenses_command(int argc, char** argv);

}  // namespace rgpu::tools
