# The generated API surface of librgpu.so. Included by the library's
# CMakeLists.txt (and by tests/shim until then); sets
#   RGPU_SHIM_API_SOURCES       generated stubs (driver and runtime), table and
#                               calls (driver_calls.cpp, from driver.api) +
#                               the hand-written cuGetProcAddress, error
#                               strings, stub reporting
#   RGPU_SHIM_MAP               the linker version script (-Wl,--version-script)
#   RGPU_SHIM_EXPORT_LISTS      the exported-name lists the map is made from
#   RGPU_SHIM_GENERATOR         the generator (api/gen_api.py)
#   RGPU_SHIM_RUNTIME_SOURCES   the hand-written runtime API (client-shim/src/runtime/)
#   RGPU_SHIM_LIBRARY_SONAMES   the CUDA libraries' sonames (generated/library_sonames.cmake)
#   RGPU_SHIM_LIBRARY_ALIASES   the linker script of their older sonames' versioned aliases
#   RGPU_SHIM_RUNTIME12_ALIASES the linker script of libcudart.so.12's versioned
#                               aliases (an input of the library's link)
# and defines the target rgpu_regen_check, which fails when regenerating would
# change the checked-in files it writes (client-shim/, server/, protocol/ and
# cpu-device/generated/).
set(_rgpu_api_dir "${CMAKE_CURRENT_LIST_DIR}")
get_filename_component(_rgpu_shim_dir "${CMAKE_CURRENT_LIST_DIR}/../client-shim" ABSOLUTE)

set(RGPU_SHIM_API_SOURCES
    ${_rgpu_shim_dir}/generated/driver_unimplemented.cpp
    ${_rgpu_shim_dir}/generated/driver_procs.cpp
    ${_rgpu_shim_dir}/generated/driver_calls.cpp
    ${_rgpu_shim_dir}/generated/runtime_unimplemented.cpp
    ${_rgpu_shim_dir}/generated/runtime12_unimplemented.cpp
    ${_rgpu_shim_dir}/src/proc_address.cpp
    ${_rgpu_shim_dir}/src/error_strings.cpp
    ${_rgpu_shim_dir}/src/unimplemented.cpp)
set(RGPU_SHIM_RUNTIME_SOURCES
    ${_rgpu_shim_dir}/src/runtime/state.cpp
    ${_rgpu_shim_dir}/src/runtime/device.cpp
    ${_rgpu_shim_dir}/src/runtime/memory.cpp
    ${_rgpu_shim_dir}/src/runtime/graph_nodes.cpp
    ${_rgpu_shim_dir}/src/runtime/graph_edit.cpp
    ${_rgpu_shim_dir}/src/runtime/stream.cpp
    ${_rgpu_shim_dir}/src/runtime/stream_attr.cpp
    ${_rgpu_shim_dir}/src/runtime/launch.cpp
    ${_rgpu_shim_dir}/src/runtime/capture.cpp
    ${_rgpu_shim_dir}/src/runtime/mempool.cpp
    ${_rgpu_shim_dir}/src/runtime/peer.cpp
    ${_rgpu_shim_dir}/src/runtime/cudart12.cpp)
set(RGPU_SHIM_MAP ${_rgpu_shim_dir}/generated/librgpu.map)
set(RGPU_SHIM_EXPORT_LISTS ${_rgpu_api_dir}/libcuda.exports ${_rgpu_api_dir}/libcudart.exports)

# The CUDA libraries (cuBLAS, cuDNN, NVML, ...; api/*.api):
# RGPU_SHIM_LIBRARY_SONAMES, their stubs and export lists, generated.
include(${_rgpu_shim_dir}/generated/library_sonames.cmake)
list(APPEND RGPU_SHIM_API_SOURCES ${RGPU_SHIM_LIBRARY_SOURCES} ${_rgpu_shim_dir}/src/nvtx.cpp
    ${_rgpu_shim_dir}/src/nvml/nvml.cpp
    ${_rgpu_shim_dir}/src/library_calls.cpp ${_rgpu_shim_dir}/src/cublaslt.cpp
    ${_rgpu_shim_dir}/src/cudnn/backend.cpp ${_rgpu_shim_dir}/src/cudnn/calls.cpp ${_rgpu_shim_dir}/src/cudnn/legacy.cpp ${_rgpu_shim_dir}/src/cudnn/rnn.cpp
    ${_rgpu_shim_dir}/src/cufft/plans.cpp
    ${_rgpu_shim_dir}/src/cusparse/calls.cpp ${_rgpu_shim_dir}/src/cusparse/descriptors.cpp)
# (RGPU_SHIM_EXPORT_LISTS stays the driver's and the runtime's: the
# libraries' lists name a function once per soname.)
set(RGPU_SHIM_RUNTIME12_ALIASES ${_rgpu_shim_dir}/generated/runtime12_aliases.ld)
set(RGPU_SHIM_LIBRARY_ALIASES ${_rgpu_shim_dir}/generated/library_aliases.ld)
set(RGPU_SHIM_GENERATOR ${_rgpu_api_dir}/gen_api.py)

# The build never regenerates by itself (that would hide a forgotten commit
# of the output); the check, also a ctest (tests/shim), reports it instead.
if(NOT TARGET rgpu_regen_check)
  add_custom_target(rgpu_regen_check
    COMMAND ${Python3_EXECUTABLE} ${RGPU_SHIM_GENERATOR} --check --cuda-home ${CUDA_HOME}
            --scratch ${CMAKE_BINARY_DIR}
    COMMENT "checking that the generated files match their generator"
    VERBATIM)
endif()
