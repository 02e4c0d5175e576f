// `rgpu pool report`: the pool's usage report (docs/pool.md, "Usage
// report"). rgpu.cpp hooks it in.
#pragma once

namespace rgpu::tools {

// argv[0] is the first argument after "report". Returns the exit status.
int pool_report_main(int argc, char** argv);

}  // namespace rgpu::tools
