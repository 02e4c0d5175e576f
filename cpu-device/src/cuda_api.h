// Includes cuda.h so that its declarations, and thus the definitions of the
// API entry points in this library, have default visibility. Every file of the
// CPU device includes cuda.h through this header.
#pragma once

#pragma GCC visibility push(default)
#include <cuda.h>
#include <cudaProfiler.h>
#pragma GCC visibility pop
