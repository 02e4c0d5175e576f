/* A libcudart.so.13 of its own, as a program's RPATH finds NVIDIA's in a
 * Python wheel: it answers 77 devices, which no rgpu server gives. */
int cudaGetDeviceCount(int* count) {
  *count = 77;
  return 0;
}
