// The environment a program needs to run on rgpu's client library: the
// preload list and the library path. `rgpu run` sets them for its command;
// `rgpu pool hold` prints them for a job's tasks (docs/slurm.md).
#pragma once

#include <filesystem>
#include <string>

namespace rgpu::tools {

struct ClientEnvironment {
  std::string preload;       // LD_PRELOAD's rgpu part (put before what the program had)
  std::string library_path;  // LD_LIBRARY_PATH's rgpu part (likewise)
};

// For the client library at `library` (find_client_library()).
ClientEnvironment client_environment(const std::filesystem::path& library);

// `value` put before `old`, with a colon, or alone when `old` is empty.
std::string path_before(const std::string& value, const char* old);

}  // namespace rgpu::tools
