# Runs a pool fuzzer (cmake/FuzzRun.cmake: about ten seconds, a seed fixed
# per commit) from a few seeds: for the input fuzzer a good lease body, a
# token, a pool.toml; with SEEDS=wire, pool protocol messages. Fails when it
# finds a crash; the input is kept in ARTIFACTS.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/FuzzRun.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/seeds)
set(body "rgpu-lease-v1\nid=42\ntenant=research\npriority=20\nissued=1000000\nexpiry=1600000\nnonce=00ff\ndevice=gpu-a 10.0.0.1:7000 0 1 8589934592 5000\n")
if(SEEDS STREQUAL "wire")
  # The pool protocol (fuzz_pool_wire.cpp): generated messages of each kind.
  file(WRITE ${WORK}/seeds/register "g0server-a")
  file(WRITE ${WORK}/seeds/submit "g1cpu")
  file(WRITE ${WORK}/seeds/granted "g2gpu-a")
  file(WRITE ${WORK}/seeds/heartbeat "g3abc")
else()
  file(WRITE ${WORK}/seeds/signed "s${body}")
  file(WRITE ${WORK}/seeds/token "v${body}mac=0000000000000000000000000000000000000000000000000000000000000000\n")
  file(WRITE ${WORK}/seeds/config "c[scheduler]\npolicy = \"spread\"\npreemption = true\nqueue_timeout_s = 30\n[heartbeat]\ninterval_s = 2\ntimeout_s = 7\n[tenants.a]\nweight = 3\n")
  file(WRITE ${WORK}/seeds/history "h{\"e\":\"start\",\"t\":0}\n{\"e\":\"server\",\"t\":0,\"server\":\"s\",\"devices\":[{\"d\":0,\"kind\":\"cpu\",\"memory\":100}]}\n{\"e\":\"grant\",\"t\":5,\"lease\":1,\"tenant\":\"a\",\"priority\":10,\"waited_ms\":3,\"devices\":[{\"server\":\"s\",\"d\":0,\"slice\":0,\"memory\":50,\"share\":0.5}]}\n{\"e\":\"util\",\"t\":900000,\"server\":\"s\",\"span_ms\":60000,\"devices\":[{\"d\":0,\"u\":0.5,\"m\":1}]}\n{\"e\":\"queue\",\"t\":7,\"queued\":2,\"tenants\":{\"a\":2}}\n{\"e\":\"end\",\"t\":1000000,\"lease\":1,\"reason\":\"released\"}\n")
endif()
rgpu_run_fuzzer(CORPUS ${WORK}/corpus SEEDS ${WORK}/seeds
                OPTIONS -timeout=20 -rss_limit_mb=2048 -max_len=4096)
