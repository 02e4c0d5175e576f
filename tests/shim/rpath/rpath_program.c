/* A library linked against a libcudart.so.13 found through its DT_RPATH
 * (which the loader searches before LD_LIBRARY_PATH), as pip's
 * libtorch_cuda.so finds the nvidia-* wheels, and opening it again with
 * dlopen + dlsym on the handle, as PyTorch does for libraries it loads
 * lazily. A preloaded library's symbols win the
 * first lookup whatever the loader mapped, but not the second: dlsym on a
 * handle searches that library alone. Under `rgpu run` both must reach
 * rgpu's runtime: exit 0 when they did, 3 when the RPATH's library answered. */
#include <dlfcn.h>
#include <stdio.h>

int cudaGetDeviceCount(int* count);

static int report(const char* how, int rc, int n) {
  printf("%s: cudaGetDeviceCount rc=%d count=%d\n", how, rc, n);
  if (n == 77) {
    printf("%s: bound to the RPATH's libcudart.so.13\n", how);
    return 3;
  }
  return rc == 0 && n >= 1 ? 0 : 1;
}

int rgpu_test_rpath_app(void) {
  int n = -1;
  int rc = cudaGetDeviceCount(&n);
  int linked = report("linked", rc, n);
  void* lib = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  int (*count)(int*) = (int (*)(int*))dlsym(lib, "cudaGetDeviceCount");
  if (!count) {
    printf("dlsym: %s\n", dlerror());
    return 1;
  }
  n = -1;
  rc = count(&n);
  int opened = report("dlopen", rc, n);
  return linked != 0 ? linked : opened;
}
