// rgpu session: an operator's view of a server's sessions, with the admin
// key (docs/operations.md, "Sessions").
#pragma once

namespace rgpu::tools {

// `rgpu session list|end ...`; argv after "session". Returns
// the process's exit code.
int session_command(int argc, char** argv);

}  // namespace rgpu::tools
