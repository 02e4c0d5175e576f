// rgpu top: a live terminal view of rgpud /metrics endpoints (docs/metrics.md).
#pragma once

namespace rgpu::tools {

// `rgpu top [--metrics URL[,URL...]] [--interval S]`; argv after "top".
// Returns the process's exit code.
int run_top(int argc, char** argv);

}  // namespace rgpu::tools
