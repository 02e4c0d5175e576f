// Where rgpu's parts are, relative to the rgpu command: the same in the
// build tree and in an installation.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace rgpu::tools {

// The folder of the running executable.
std::filesystem::path self_dir();
// The client library librgpu.so: in ../lib, beside us, or in ../lib/rgpu;
// empty when none is there.
std::filesystem::path find_client_library();
// The sonames in `dir` (lib/rgpu/: links to librgpu.so, one per library
// name rgpu answers to), sorted so that the preload list is the same every
// run.
std::vector<std::string> rgpu_sonames(const std::filesystem::path& dir);

}  // namespace rgpu::tools
