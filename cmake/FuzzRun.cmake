# One run of a libFuzzer target, for the suites' run_fuzz.cmake scripts (run
# by ctest in script mode, `cmake -P`) and for scripts/fuzz.sh, which runs
# the same scripts with the environment below.
#
# rgpu_run_fuzzer(CORPUS <dir> [SEEDS <dirs...>] [OPTIONS <libFuzzer flags...>])
#   FUZZER (a -D of the test) is the binary; CORPUS the writable corpus,
#   normally inside the folder the script clears first; SEEDS read-only
#   input folders. Prints the seed and the commit it comes from, runs, and
#   fails (FATAL_ERROR) when the fuzzer fails, naming each input it kept and
#   the command that reproduces it.
#
# Reproducible: the seed is fixed per commit (the first 7 hex digits of
# `git rev-parse HEAD`, as a number), so a crash found in CI is found again
# by the same run of the same commit; RGPU_FUZZ_SEED overrides it. Inputs
# that crash, leak, time out or run out of memory go to ARTIFACTS (a -D of
# the test: BUILD/fuzz-artifacts/<target>, or RGPU_FUZZ_ARTIFACTS), outside
# the folder a run clears, named <commit>-seed<N>-<kind>-<hash>.
#
# The environment scripts/fuzz.sh sets:
#   RGPU_FUZZ_SECONDS  the time budget (default 10 s)
#   RGPU_FUZZ_RUNS     a count of executions instead of a time
#   RGPU_FUZZ_CORPUS   a folder whose <target>/ subfolder is the corpus,
#                      kept between runs (CORPUS is then only read)
include_guard(GLOBAL)

function(rgpu_run_fuzzer)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "CORPUS" "SEEDS;OPTIONS")
  if(NOT FUZZER OR NOT arg_CORPUS)
    message(FATAL_ERROR "rgpu_run_fuzzer: needs -DFUZZER and CORPUS")
  endif()
  get_filename_component(target ${FUZZER} NAME)
  get_filename_component(repo ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/.. ABSOLUTE)

  # The seed: fixed per commit, printed.
  execute_process(COMMAND git -C ${repo} rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE git_rc ERROR_QUIET)
  if(NOT git_rc EQUAL 0 OR commit STREQUAL "")
    set(commit nocommit)
  endif()
  if(DEFINED ENV{RGPU_FUZZ_SEED} AND NOT "$ENV{RGPU_FUZZ_SEED}" STREQUAL "")
    set(seed $ENV{RGPU_FUZZ_SEED})
    set(seed_from "RGPU_FUZZ_SEED")
  elseif(commit STREQUAL "nocommit")
    set(seed 1)
    set(seed_from "no git checkout: a fixed seed")
  else()
    string(SUBSTRING ${commit} 0 7 hex)
    math(EXPR seed "0x${hex}")
    set(seed_from "commit ${commit}")
  endif()
  if(seed EQUAL 0)
    set(seed 1)  # libFuzzer takes 0 to mean "pick one at random"
  endif()

  # Where a failing input is kept: outside the folders a run clears.
  if(DEFINED ENV{RGPU_FUZZ_ARTIFACTS} AND NOT "$ENV{RGPU_FUZZ_ARTIFACTS}" STREQUAL "")
    set(artifacts $ENV{RGPU_FUZZ_ARTIFACTS}/${target})
  elseif(ARTIFACTS)
    set(artifacts ${ARTIFACTS})
  else()
    message(FATAL_ERROR "rgpu_run_fuzzer: needs -DARTIFACTS or RGPU_FUZZ_ARTIFACTS")
  endif()
  file(MAKE_DIRECTORY ${artifacts})
  string(SUBSTRING ${commit} 0 7 short)
  set(prefix ${artifacts}/${short}-seed${seed}-)

  # The budget, and the corpus kept between runs when asked for.
  set(budget -max_total_time=10)
  set(what "10 s")
  if(DEFINED ENV{RGPU_FUZZ_RUNS} AND NOT "$ENV{RGPU_FUZZ_RUNS}" STREQUAL "")
    set(budget -runs=$ENV{RGPU_FUZZ_RUNS})
    set(what "$ENV{RGPU_FUZZ_RUNS} executions")
  elseif(DEFINED ENV{RGPU_FUZZ_SECONDS} AND NOT "$ENV{RGPU_FUZZ_SECONDS}" STREQUAL "")
    set(budget -max_total_time=$ENV{RGPU_FUZZ_SECONDS})
    set(what "$ENV{RGPU_FUZZ_SECONDS} s")
  endif()
  set(inputs ${arg_CORPUS} ${arg_SEEDS})
  if(DEFINED ENV{RGPU_FUZZ_CORPUS} AND NOT "$ENV{RGPU_FUZZ_CORPUS}" STREQUAL "")
    set(kept $ENV{RGPU_FUZZ_CORPUS}/${target})
    file(MAKE_DIRECTORY ${kept})
    set(inputs ${kept} ${arg_CORPUS} ${arg_SEEDS})
  endif()

  file(GLOB before ${prefix}*)
  message(STATUS "fuzz ${target}: seed ${seed} (${seed_from}), ${what}; failing inputs go to ${artifacts}")
  # The output is shown as it comes and kept, to name the inputs it wrote
  # (a crash found again writes the same file, already there).
  execute_process(
    COMMAND ${FUZZER} -seed=${seed} ${budget} -print_final_stats=1 ${arg_OPTIONS}
            -artifact_prefix=${prefix} ${inputs}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out ECHO_OUTPUT_VARIABLE ECHO_ERROR_VARIABLE)
  if(NOT rc EQUAL 0)
    file(GLOB after ${prefix}*)
    if(before)
      list(REMOVE_ITEM after ${before})
    endif()
    string(REGEX MATCHALL "Test unit written to [^\n ]+" written "${out}")
    foreach(w ${written})
      string(REPLACE "Test unit written to " "" w "${w}")
      list(APPEND after ${w})
    endforeach()
    list(REMOVE_DUPLICATES after)
    string(JOIN " " options ${arg_OPTIONS})
    set(kept_inputs "")
    foreach(f ${after})
      string(APPEND kept_inputs "\n  input: ${f}\n  reproduce: ${FUZZER} ${options} ${f}")
    endforeach()
    if(kept_inputs STREQUAL "")
      set(kept_inputs "\n  no input was written (the fuzzer itself failed to run?)")
    endif()
    message(FATAL_ERROR "fuzz ${target}: FAILED (rc=${rc}, seed ${seed}, ${seed_from})${kept_inputs}")
  endif()
endfunction()
