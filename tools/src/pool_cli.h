// `rgpu pool ...`: the pool's operator commands (docs/pool.md).
#pragma once

namespace rgpu::tools {

// argv[0] is the word after "pool". Returns the process's exit status.
int pool_main(int argc, char** argv);

}  // namespace rgpu::tools
