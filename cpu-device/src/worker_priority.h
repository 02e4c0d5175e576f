// The scheduling priority of the threads that do the CPU device's work
// (kernel workers, stream workers, host-function threads, and the library
// threads they start): lower than the server's own, so that a busy device
// does not keep the threads that answer clients off the CPU.
#pragma once

namespace rgpu::cpudev {

// The niceness the work threads take (0..19; 0: as the process). Set once
// from the configuration before the device starts its threads.
void set_worker_nice(int nice);
// Called first by every work thread: lowers its own priority to the
// configured niceness (never raises it).
void lower_worker_priority();

}  // namespace rgpu::cpudev
