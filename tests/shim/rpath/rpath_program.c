/* Linked against a libcudart.so.13 found through DT_RPATH (which the loader
 * searches before LD_LIBRARY_PATH), as pip's PyTorch finds the nvidia-*
 * wheels. Under `rgpu run` it must bind to rgpu's runtime all the same:
 * exit 0 when it did (a device count from the server), 3 when the RPATH's
 * library answered. */
#include <stdio.h>

int cudaGetDeviceCount(int* count);

int main(void) {
  int n = -1;
  int rc = cudaGetDeviceCount(&n);
  printf("cudaGetDeviceCount rc=%d count=%d\n", rc, n);
  if (n == 77) {
    printf("bound to the RPATH's libcudart.so.13\n");
    return 3;
  }
  return rc == 0 && n >= 1 ? 0 : 1;
}
