# The kernel corpus (tests/kernels/*.cu) and a helper that compiles it to PTX
# with nvcc at build time, for any test that runs kernels.
set(RGPU_KERNEL_CORPUS
  elementwise matmul reduce scan histogram transpose stencil f64_math f16_math printf
  dynamic_shared params vote device_funcs math_funcs atomics conversions warp_ops
  divergence local_array bits assert_trap warp_sm80 block_reduce math_more warp_masks special_regs
  cg_tiles)
set(RGPU_KERNEL_DIR ${CMAKE_CURRENT_LIST_DIR})

# rgpu_add_ptx_corpus(<target> <outdir> <arch>...): a target that builds
# <outdir>/<kernel>.<arch>.ptx for every corpus kernel and arch.
function(rgpu_add_ptx_corpus target outdir)
  set(outputs)
  foreach(kernel ${RGPU_KERNEL_CORPUS})
    foreach(arch ${ARGN})
      set(out ${outdir}/${kernel}.${arch}.ptx)
      add_custom_command(OUTPUT ${out}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${outdir}
        COMMAND ${NVCC_EXECUTABLE} -O3 -ptx -arch=${arch} -o ${out} ${RGPU_KERNEL_DIR}/${kernel}.cu
        DEPENDS ${RGPU_KERNEL_DIR}/${kernel}.cu
        COMMENT "nvcc -ptx ${kernel}.cu (${arch})"
        VERBATIM)
      list(APPEND outputs ${out})
    endforeach()
  endforeach()
  add_custom_target(${target} DEPENDS ${outputs})
endfunction()
