# libFuzzer targets of the test suites (ctest label "fuzz"). The main build
# may use g++, which has no libFuzzer, so each target is built by invoking
# clang++ directly on its harness and the sources under test, all of them
# instrumented with libFuzzer, ASan and UBSan. Included once, from
# tests/CMakeLists.txt, so clang++ is looked for and probed once per configure.
include_guard(GLOBAL)

# RGPU_FUZZ_OK: TRUE when clang++ links a trivial fuzzer. Suites test it and,
# when FALSE, say in their own words which targets they skip; a strict (CI)
# configure fails here instead (cmake/TestStrict.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/TestStrict.cmake)
find_program(RGPU_CLANGXX NAMES clang++ clang++-14)
set(RGPU_FUZZ_OK FALSE)
if(RGPU_CLANGXX)
  set(_rgpu_probe ${CMAKE_BINARY_DIR}/fuzz_probe)
  file(WRITE ${_rgpu_probe}.cpp "#include <cstdint>\n#include <cstddef>\nextern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
  execute_process(
    COMMAND ${RGPU_CLANGXX} -fsanitize=fuzzer,address ${_rgpu_probe}.cpp -o ${_rgpu_probe}
    RESULT_VARIABLE _rgpu_probe_rc OUTPUT_QUIET ERROR_QUIET)
  if(_rgpu_probe_rc EQUAL 0)
    set(RGPU_FUZZ_OK TRUE)
  endif()
endif()
if(NOT RGPU_FUZZ_OK)
  rgpu_test_dependency_missing("clang++ with libFuzzer (clang, libclang-rt-14-dev) not found: the fuzz targets are left out")
endif()

# rgpu_fuzz_target(<name>
#   SOURCES <harness and sources under test...>
#   [INCLUDES <dirs...>] [DEFINES <NAME=value...>] [LIBS <link arguments...>]
#   [DEPENDS <files or targets whose change rebuilds it...>]
#   [TARGET_DEPENDS <targets built first, whose change does not rebuild it>]
#   TEST <ctest name> [TEST_ARGS <-DVAR=value...>] [LABELS <labels besides fuzz>]
#   [ENVIRONMENT <VAR=value...>])
# Builds bin/<name> (target <name>, part of ALL) and registers one ctest that
# runs run_fuzz.cmake of the calling directory with -DFUZZER=<the binary>,
# -DARTIFACTS=<build>/fuzz-artifacts/<name> and TEST_ARGS; that script owns
# the seed inputs and runs the fuzzer through cmake/FuzzRun.cmake (a seed
# fixed per commit, about ten seconds, failing inputs kept in ARTIFACTS);
# ctest gives it 120. Call only when RGPU_FUZZ_OK.
function(rgpu_fuzz_target name)
  cmake_parse_arguments(PARSE_ARGV 1 arg ""
    "TEST" "SOURCES;INCLUDES;DEFINES;LIBS;DEPENDS;TARGET_DEPENDS;TEST_ARGS;LABELS;ENVIRONMENT")
  if(NOT arg_SOURCES OR NOT arg_TEST OR arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "rgpu_fuzz_target(${name}): needs SOURCES and TEST; unexpected: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  set(out ${CMAKE_BINARY_DIR}/bin/${name})
  list(TRANSFORM arg_INCLUDES PREPEND -I)
  list(TRANSFORM arg_DEFINES PREPEND -D)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/bin
    COMMAND ${RGPU_CLANGXX} -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined
            -fno-sanitize-recover=undefined ${arg_DEFINES} ${arg_INCLUDES}
            ${arg_SOURCES} ${arg_LIBS} -o ${out}
    DEPENDS ${arg_SOURCES} ${arg_DEPENDS}
    COMMENT "clang++ libFuzzer: ${name}"
    VERBATIM)
  add_custom_target(${name} ALL DEPENDS ${out})
  if(arg_TARGET_DEPENDS)
    add_dependencies(${name} ${arg_TARGET_DEPENDS})
  endif()

  add_test(NAME ${arg_TEST}
    COMMAND ${CMAKE_COMMAND} -DFUZZER=${out} -DARTIFACTS=${CMAKE_BINARY_DIR}/fuzz-artifacts/${name} ${arg_TEST_ARGS}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/run_fuzz.cmake)
  list(APPEND arg_LABELS fuzz)
  set_tests_properties(${arg_TEST} PROPERTIES TIMEOUT 120 LABELS "${arg_LABELS}")
  if(arg_ENVIRONMENT)
    set_tests_properties(${arg_TEST} PROPERTIES ENVIRONMENT "${arg_ENVIRONMENT}")
  endif()
endfunction()
