// rgpu doctor: what a program run through rgpu would meet on this machine
// (the libraries it loads, UCX's transports, the pool, the server, its
// devices and the round trip), each problem with its fix in one line.
#pragma once

namespace rgpu::tools {

// `rgpu doctor [--server HOST:PORT] [--pool HOST:PORT] [--device D]`; argv
// holds what follows "doctor". Exit status 0 when nothing would fail, 1 when
// something would, 2 for bad usage.
int doctor_main(int argc, char** argv);

}  // namespace rgpu::tools
