#!/usr/bin/env bash
# The PyTorch test environment: a Debian trixie root filesystem with Debian's
# CUDA build of PyTorch, in which rgpu is the host's whole CUDA. See
# docs/pytorch.md.
#
#   torch-env.sh build [--refresh] [--build-dir DIR]
#                                        make (or reuse) the cached root
#   torch-env.sh run [--server HOST:PORT | --pool HOST:PORT] [--build-dir DIR] -- CMD ARGS...
#                                        run CMD in the root, in the current
#                                        directory, under `rgpu run`
#   torch-env.sh test [--server HOST:PORT | --pool HOST:PORT] [--build-dir DIR] [-- PYTEST ARGS...]
#                                        the tests/pytorch suite, in the root
#   torch-env.sh package [--build-dir DIR] [OUT.deb]
#                                        only build the rgpu-client-libs package
#   torch-env.sh path                    print the cached root's path
#
# Runs as root (debootstrap, chroot, mounts). The root is cached in
# ${RGPU_CACHE:-/var/cache/rgpu}/torch-env/<key>, the key naming the versions
# of the packages it holds, so a second build takes seconds. NVIDIA's
# libraries other than NVRTC are not installed: the local package
# rgpu-client-libs provides them with rgpu's own client library, and is
# rebuilt from the current build and installed on every run into a
# throw-away overlay above the cached root: the cache itself is never
# written by a run, so runs from several build folders may go at once.
set -euo pipefail

self="$(readlink -f "${BASH_SOURCE[0]}")"
repo="$(cd "$(dirname "$self")/.." && pwd)"
cache="${RGPU_CACHE:-/var/cache/rgpu}/torch-env"
mirror="${RGPU_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
suite=trixie
# Bumped when the recipe below changes, so that older roots are not reused.
recipe=1
packages=(python3-torch-cuda python3-torchvision python3-pytest python3-pynvml libnvrtc12)
multiarch=/usr/lib/x86_64-linux-gnu

# NVIDIA's packages that rgpu-client-libs stands in for, with the versions
# trixie has (PyTorch's packages ask for libcuda1 >= 525, libnccl2 >= 2.22.3,
# libnvtoolsext1 >= 5.0 and nvidia-cudnn >= 9.0.0.312~; libcusolver11 and
# libcublas12 pin each other's exact versions). nvidia-cudnn in Debian is a
# downloader that fetches cuDNN from NVIDIA at install time: never installed.
provided=(
  "libcuda1 550.163.01-2" "libcuda.so.1 550.163.01"
  "libcudart12 12.4.127~12.4.1-2"
  "libcublas12 12.4.5.8~12.4.1-2" "libcublaslt12 12.4.5.8~12.4.1-2"
  "libcufft11 11.2.1.3~12.4.1-2" "libcurand10 11.1.1+~10.3.5.147~12.4.1-2"
  "libcusolver11 11.6.1.9~12.4.1-2" "libcusparse12 12.3.1.170~12.4.1-2"
  "libnccl2 2.22.3-1-1" "libnccl.so.2 2.22.3"
  "libnvtoolsext1 12.4.127~12.4.1-2"
  "libnvidia-ml1 550.163.01-2" "libnvidia-ml.so.1 550.163.01"
  "nvidia-cudnn 9.0.0.312~cuda12" "libcudnn.so.9 9.0.0.312"
)
# The real packages among them: rgpu-client-libs conflicts with (and checks
# the root holds none of) these.
replaced=(libcuda1 libcudart12 libcublas12 libcublaslt12 libcufft11 libcurand10 libcusolver11
          libcusparse12 libnccl2 libnvtoolsext1 libnvidia-ml1 nvidia-cudnn)
# rgpu's client library under each soname PyTorch and its libraries load;
# whatever build/lib/rgpu/ holds is added to these.
sonames=(libcuda.so.1 libcudart.so.12 libcublas.so.12 libcublasLt.so.12 libcudnn.so.9 libcufft.so.11
         libcurand.so.10 libcusolver.so.11 libcusparse.so.12 libnccl.so.2 libnvToolsExt.so.1
         libnvidia-ml.so.1)

say() { echo "torch-env: $*" >&2; }
die() { say "$*"; exit 1; }

usage() {
  sed -n '6,15p' "$self" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

need_root() { [ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot and mounts)"; }

need_tools() {
  local missing=()
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v patchelf >/dev/null || missing+=(patchelf)
  if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
  fi
}

# --- mounts ---------------------------------------------------------------

# Runs in a private mount namespace (see in_root): mounts what a program in
# the root needs, runs it there and unmounts on the way out. The namespace
# also drops every mount if this process is killed.
# usage: __enter ROOT CWD BIND... -- CMD ARGS...
enter() {
  local root="$1" cwd="$2"
  shift 2
  local binds=()
  while [ "$1" != "--" ]; do binds+=("$1"); shift; done
  shift
  mounted=()
  trap unmount_all EXIT
  if [ -n "${TORCH_ENV_RUN_DIR:-}" ]; then overlay_root "$root"; fi
  mnt "$root/proc" -t proc proc
  mnt "$root/sys" --rbind /sys
  # /dev with /dev/shm: UCX's shared-memory transport to the host's rgpud.
  mnt "$root/dev" --rbind /dev
  mnt "$root/tmp" -t tmpfs -o mode=1777 tmpfs
  local d
  # The mount points made here stay, empty: removing one would detach it
  # from a concurrent run's namespace.
  for d in "${binds[@]}"; do
    mkdir -p "$root$d"
    mnt "$root$d" --bind "$d"
  done
  local rc=0
  run_forwarding chroot "$root" /usr/bin/env -u LD_PRELOAD -u LD_LIBRARY_PATH \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    /bin/sh -c 'cd "$1" || exit 1; shift; exec "$@"' sh "$cwd" "$@" || rc=$?
  exit "$rc"
}

# run_forwarding CMD ARGS...: CMD (a program, not a function, so that it
# becomes the process that the signal is sent to) with this shell's stdin,
# INT and TERM passed on to it; returns its status once it has exited. A
# signal must not leave CMD running without its mounts or its server.
run_forwarding() {
  # An asynchronous command would ignore INT; the subshell restores it, then
  # becomes CMD (same pid).
  (
    trap - INT QUIT
    exec "$@"
  ) <&0 &
  local child=$! rc=0
  trap 'kill -INT "$child" 2>/dev/null || true' INT
  trap 'kill -TERM "$child" 2>/dev/null || true' TERM
  while :; do
    wait "$child" && rc=0 || rc=$?
    kill -0 "$child" 2>/dev/null || break
  done
  trap - INT TERM
  return "$rc"
}

# mnt TARGET MOUNT-ARGS...: mounts, remembering TARGET for unmount_all.
mnt() {
  local target="$1"
  shift
  mount "$@" "$target" || die "mount $* $target failed"
  mounted+=("$target")
}

unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[i]}" 2>/dev/null || umount -R -l "${mounted[i]}" || true
  done
}

# in_root ROOT CWD BIND... -- CMD ARGS...: CMD in the root, in CWD. (unshare
# execs bash, so a signal to this command's pid reaches enter's trap.)
in_root_cmd=(unshare --mount --propagation private -- bash "$self" __enter)
in_root() { "${in_root_cmd[@]}" "$@"; }

# --- the root -------------------------------------------------------------

# The base: a minimal trixie with its package index, from which versions are
# resolved and every keyed root is copied.
make_base() {
  local base="$cache/base"
  if [ ! -e "$base/.complete" ]; then
    say "debootstrap $suite (minbase) into $base"
    rm -rf "$base.tmp"
    debootstrap --variant=minbase --components=main,contrib,non-free,non-free-firmware \
      "$suite" "$base.tmp" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
      die "debootstrap failed; see $cache/debootstrap.log"
    echo "deb $mirror $suite main contrib non-free non-free-firmware" >"$base.tmp/etc/apt/sources.list"
    # No service starts inside the root.
    printf '#!/bin/sh\nexit 101\n' >"$base.tmp/usr/sbin/policy-rc.d"
    chmod 755 "$base.tmp/usr/sbin/policy-rc.d"
    chroot "$base.tmp" apt-get update -q >/dev/null
    touch "$base.tmp/.complete"
    mv "$base.tmp" "$base"
  elif [ "${refresh:-0}" = 1 ] || [ -n "$(find "$base/.complete" -mtime +7)" ]; then
    say "refreshing the package index"
    chroot "$base" apt-get update -q >/dev/null
    touch "$base/.complete"
  fi
}

# The candidate version of each package, from the base's index: "name=version ...".
resolve_versions() {
  local p v found=()
  for p in "${packages[@]}"; do
    v="$(chroot "$cache/base" apt-cache policy "$p" | awk '/Candidate:/ {print $2}')"
    if [ -z "$v" ] || [ "$v" = "(none)" ]; then die "$p has no candidate in $suite"; fi
    found+=("$p=$v")
  done
  echo "${found[*]}"
}

# Sets root_dir to the keyed root, building it if it is not there.
build_root() {
  need_root
  need_tools
  mkdir -p "$cache"
  exec 9>"$cache/.lock"
  flock 9
  make_base
  local versions key dir
  versions="$(resolve_versions)"
  key="$(echo "recipe=$recipe $suite $versions" | sha256sum | cut -c1-16)"
  dir="$cache/$key"
  root_dir="$dir/root"
  if [ -e "$dir/.complete" ]; then
    exec 9>&-
    return
  fi
  say "building the root for $versions in $dir"
  rm -rf "$dir"
  mkdir -p "$dir" "$cache/archives/partial"
  cp -a --reflink=auto "$cache/base" "$dir/root"
  rm -f "$dir/root/.complete"
  local deb="$dir/rgpu-client-libs.deb"
  make_package "$deb"
  cp "$deb" "$dir/root/var/cache/rgpu-client-libs.deb"
  # Downloaded .debs are kept in $cache/archives, shared by every key.
  local apt_install=(apt-get install -y -q --no-install-recommends -o Dpkg::Use-Pty=0)
  in_root "$dir/root" / "$cache/archives" -- sh -c "
    set -e
    export DEBIAN_FRONTEND=noninteractive
    ${apt_install[*]} -o Dir::Cache::Archives=$cache/archives/ /var/cache/rgpu-client-libs.deb
    ${apt_install[*]} -o Dir::Cache::Archives=$cache/archives/ $versions
  " >"$dir/install.log" 2>&1 || die "installing into the root failed; see $dir/install.log"
  local p
  for p in "${replaced[@]}"; do
    if chroot "$dir/root" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
      die "NVIDIA's $p was installed in the root: rgpu-client-libs no longer satisfies a dependency on it ($dir/install.log)"
    fi
  done
  rmdir -p --ignore-fail-on-non-empty "$dir/root$cache/archives"
  echo "$versions" >"$dir/versions"
  touch "$dir/.complete"
  say "root ready: $(du -sh "$dir/root" | cut -f1) in $dir/root"
  exec 9>&-
}

# --- rgpu-client-libs -------------------------------------------------------

# make_package OUT.deb: rgpu's client library under NVIDIA's sonames, with the
# UCX and Cap'n Proto libraries it needs from this host, the rgpu CLI, and
# NVIDIA's package names in Provides. Findable without LD_LIBRARY_PATH: the
# copies' RUNPATH is their own folder.
make_package() {
  local out="$1"
  local lib="$build/lib/librgpu.so" cli="$build/bin/rgpu"
  if [ ! -f "$lib" ] || [ ! -x "$cli" ]; then die "no rgpu build in $build (run scripts/build.sh first)"; fi
  local stage="$build/torch-env/rgpu-client-libs"
  local priv="$stage$multiarch/rgpu"
  rm -rf "$stage"
  mkdir -p "$stage/DEBIAN" "$priv/ucx" "$stage/usr/bin"

  install -m 644 "$lib" "$priv/librgpu.so"
  # Loaded as rgpu/librgpu.so (rgpu run's preload) or through a soname
  # symlink in the multiarch folder: $ORIGIN is then that folder.
  patchelf --set-rpath '$ORIGIN/rgpu:$ORIGIN' "$priv/librgpu.so"
  local name path ucs=""
  while read -r name path; do
    case "$name" in
      libucp.so.* | libuct.so.* | libucs.so.* | libucm.so.* | libcapnp-*.so | libkj-*.so) ;;
      *) continue ;;
    esac
    install -m 644 "$(readlink -f "$path")" "$priv/$name"
    patchelf --set-rpath '$ORIGIN' "$priv/$name"
    case "$name" in libucs.so.*) ucs="$path" ;; esac
  done < <(ldd "$lib" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
  [ -n "$ucs" ] || die "ldd $lib names no libucs (is UCX installed?)"
  # UCX loads its transport modules from ucx/ beside libucs, named like it.
  local m
  for m in "$(dirname "$(readlink -f "$ucs")")"/ucx/*.so.0; do
    [ -e "$m" ] || continue
    install -m 644 "$(readlink -f "$m")" "$priv/ucx/$(basename "$m")"
    patchelf --set-rpath '$ORIGIN/..' "$priv/ucx/$(basename "$m")"
  done
  # The NVRTC fronts, which rgpu run preloads (docs/pytorch.md).
  if [ -d "$build/lib/rgpu-nvrtc" ]; then
    mkdir -p "$priv/rgpu-nvrtc"
    for f in "$build/lib/rgpu-nvrtc"/libnvrtc.so.*; do install -m 644 "$f" "$priv/rgpu-nvrtc/"; done
  fi
  # The CLI finds librgpu.so beside itself; /usr/bin/rgpu points there.
  install -m 755 "$cli" "$priv/rgpu"
  ln -s "../lib/x86_64-linux-gnu/rgpu/rgpu" "$stage/usr/bin/rgpu"
  # The CLI's own libraries that trixie does not have at this soname (Cap'n
  # Proto for the pool's protocol, bookworm's cpp-httplib for rgpu top),
  # beside it.
  patchelf --set-rpath '$ORIGIN' "$priv/rgpu"
  while read -r name path; do
    case "$name" in
      libcapnp-*.so | libkj-*.so | libcpp-httplib.so.*) ;;
      *) continue ;;
    esac
    [ -e "$priv/$name" ] && continue
    install -m 644 "$(readlink -f "$path")" "$priv/$name"
    patchelf --set-rpath '$ORIGIN' "$priv/$name"
  done < <(ldd "$cli" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')

  local names=("${sonames[@]}") f
  if [ -d "$build/lib/rgpu" ]; then
    for f in "$build/lib/rgpu"/*; do [ -L "$f" ] && names+=("$(basename "$f")"); done
  fi
  for name in $(printf '%s\n' "${names[@]}" | sort -u); do
    ln -s "rgpu/librgpu.so" "$stage$multiarch/$name"
  done

  local version provides="" conflicts="" entry
  version="$("$cli" --version | awk '{print $2}')"
  [ -n "$version" ] || die "$cli --version printed nothing"
  local pkg pkg_version
  for entry in "${provided[@]}"; do
    read -r pkg pkg_version <<<"$entry"
    provides+="${provides:+, }$pkg (= $pkg_version)"
  done
  for entry in "${replaced[@]}"; do conflicts+="${conflicts:+, }$entry"; done
  cat >"$stage/DEBIAN/control" <<EOF
Package: rgpu-client-libs
Version: $version
Architecture: amd64
Section: libs
Priority: optional
Maintainer: rgpu <rgpu@localhost>
Depends: libc6 (>= 2.36), libstdc++6 (>= 12), libgcc-s1, libssl3t64 | libssl3, liblz4-1, libzstd1, libnuma1
Provides: $provides
Conflicts: $conflicts
Replaces: $conflicts
Description: rgpu's client: the host's CUDA libraries, served by a remote rgpud
 rgpu's client library installed under the sonames of NVIDIA's driver and
 CUDA libraries (libcuda.so.1, libcudart.so.12, libcublas.so.12, ...), so
 that programs linked against them, such as Debian's CUDA build of PyTorch,
 run on a host with no GPU; their calls go to the rgpud named by
 RGPU_SERVER (or rgpu run --server). Also the rgpu command.
EOF
  echo "activate-noawait ldconfig" >"$stage/DEBIAN/triggers"
  mkdir -p "$(dirname "$out")"
  dpkg-deb --root-owner-group -Zgzip -z1 --build "$stage" "$out" >/dev/null
}

# Makes the package from the current build, for overlay_root to install.
prepare_package() {
  make_package "$build/torch-env/rgpu-client-libs.deb"
}

# overlay_root ROOT (inside enter's namespace): mounts an overlay whose lower
# layer is the cached ROOT and whose upper layer is this run's folder
# (TORCH_ENV_RUN_DIR), installs the package made by prepare_package there,
# and sets root to the overlay. The folder goes when the run ends.
overlay_root() {
  local lower="$1" dir="$TORCH_ENV_RUN_DIR"
  mkdir -p "$dir/upper" "$dir/work" "$dir/root"
  mnt "$dir/root" -t overlay overlay -o "lowerdir=$lower,upperdir=$dir/upper,workdir=$dir/work"
  root="$dir/root"
  cp "$build/torch-env/rgpu-client-libs.deb" "$root/var/cache/rgpu-client-libs.deb"
  chroot "$root" dpkg -i /var/cache/rgpu-client-libs.deb >"$build/torch-env/dpkg.log" 2>&1 ||
    die "dpkg -i rgpu-client-libs failed in the root; see $build/torch-env/dpkg.log"
}

# --- rgpud on the host ----------------------------------------------------

rgpud_pid=""
stop_rgpud() {
  [ -n "$rgpud_pid" ] || return 0
  kill -TERM "$rgpud_pid" 2>/dev/null || true
  local i
  for ((i = 0; i < 100; i++)); do  # up to 10 s
    kill -0 "$rgpud_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$rgpud_pid" 2>/dev/null || true
  wait "$rgpud_pid" 2>/dev/null || true
  rgpud_pid=""
}

# Starts rgpud on the CPU device on a free loopback port; sets server and
# exports the key the client must prove.
start_rgpud() {
  local rgpud="$build/bin/rgpud"
  [ -x "$rgpud" ] || die "no $rgpud (run scripts/build.sh first)"
  RGPU_AUTH_TOKEN="$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')"
  export RGPU_AUTH_TOKEN
  unset RGPU_AUTH_TOKEN_FILE RGPU_TENANT
  local log="$build/torch-env/rgpud.log"
  mkdir -p "$build/torch-env"
  # Emptied here, not by the background job's redirection: that one may come
  # after the first read below, which would then find the previous run's port.
  : >"$log"
  "$rgpud" --listen 127.0.0.1:0 --device cpu >>"$log" 2>&1 &
  rgpud_pid=$!
  local i
  for ((i = 0; i < 300; i++)); do  # up to 30 s
    server="$(sed -n 's/^rgpud listening on \([^ ]*\).*/\1/p' "$log")"
    started_server="$server"
    [ -n "$server" ] && return 0
    kill -0 "$rgpud_pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$log" >&2
  die "rgpud did not start"
}

# --- commands -------------------------------------------------------------

parse_common() {
  server=""
  pool=""
  build="${BUILD_DIR:-$repo/build}"
  rest=()
  while (($#)); do
    case "$1" in
      --server) server="${2:?--server wants HOST:PORT}"; shift 2 ;;
      --pool) pool="${2:?--pool wants HOST:PORT}"; shift 2 ;;
      --build-dir) build="${2:?--build-dir wants a folder}"; shift 2 ;;
      --) shift; rest=("$@"); return ;;
      -*) die "unknown option '$1'" ;;
      *) rest=("$@"); return ;;  # the command, without "--"
    esac
  done
}

cmd_run() {
  parse_common "$@"
  ((${#rest[@]})) || die "run: no command given (torch-env.sh run [--server HOST:PORT] -- CMD ARGS...)"
  build="$(readlink -f "$build")"
  local cwd
  cwd="$(pwd -P)"
  [ "$cwd" != / ] || die "run from a folder other than /: it is bind-mounted into the root"
  build_root
  prepare_package
  # This run's overlay layer; enter mounts and fills it, this shell removes
  # it after the namespace (and with it the mount) has gone.
  TORCH_ENV_RUN_DIR="$(mktemp -d "$build/torch-env/run.XXXXXX")"
  export TORCH_ENV_RUN_DIR build
  trap 'stop_rgpud; rm -rf "$TORCH_ENV_RUN_DIR"' EXIT
  # With --pool, rgpu run asks rgpu-pool (RGPU_POOL_KIND and the other
  # RGPU_POOL_* settings pass through) and no rgpud is started here.
  local target=(--server "$server")
  if [ -n "$pool" ]; then
    target=(--pool "$pool")
  else
    [ -n "$server" ] || start_rgpud
    target=(--server "$server")
  fi
  local binds=("$cwd")
  [ -n "${extra_bind:-}" ] && binds+=("$extra_bind")
  local rc=0
  # Debian's PyTorch opens libtorch_cuda_linalg.so (torch.linalg on CUDA) by
  # that unversioned name, which only torch/lib holds and no RUNPATH names:
  # the library path gets it, after what rgpu run puts there.
  # rgpu run names rgpud's log when the command fails.
  if [ -n "${started_server:-}" ] && [ "$server" = "$started_server" ]; then
    export RGPU_SERVER_LOG="$build/torch-env/rgpud.log"
  fi
  run_forwarding "${in_root_cmd[@]}" "$root_dir" "$cwd" "${binds[@]}" -- rgpu run "${target[@]}" -- \
    sh -c 'LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/usr/lib/python3/dist-packages/torch/lib" exec "$@"' sh \
    "${rest[@]}" || rc=$?
  stop_rgpud
  rm -rf "$TORCH_ENV_RUN_DIR"
  return "$rc"
}

cmd_test() {
  parse_common "$@"
  local args=("${rest[@]}")
  build="$(readlink -f "$build")"
  mkdir -p "$build/torch-env"
  cd "$repo"
  case "$build/" in "$repo"/*) ;; *) extra_bind="$build" ;; esac
  local opts=()
  [ -n "$server" ] && opts+=(--server "$server")
  [ -n "$pool" ] && opts+=(--pool "$pool")
  export PYTHONDONTWRITEBYTECODE=1
  # A case that takes over a minute (every one takes well under a second)
  # prints every thread's Python stack: a stall says where it is.
  cmd_run "${opts[@]}" --build-dir "$build" -- \
    python3 -m pytest -p no:cacheprovider -rs -o faulthandler_timeout=60 \
    --junitxml="$build/torch-env/pytorch-tests.xml" tests/pytorch "${args[@]}"
}

main() {
  (($#)) || usage
  local cmd="$1"
  shift
  case "$cmd" in
    __enter) enter "$@" ;;
    build | path)
      refresh=0
      if [ "$cmd" = build ] && [ "${1:-}" = --refresh ]; then
        refresh=1
        shift
      fi
      parse_common "$@"
      if ((${#rest[@]})) || [ -n "$server" ]; then usage; fi
      build="$(readlink -f "$build")"
      build_root
      echo "$root_dir"
      ;;
    run) cmd_run "$@" ;;
    test) cmd_test "$@" ;;
    package)
      build="${BUILD_DIR:-$repo/build}"
      if [ "${1:-}" = --build-dir ]; then build="$2"; shift 2; fi
      need_tools
      local out="${1:-$build/torch-env/rgpu-client-libs.deb}"
      make_package "$out"
      echo "$out"
      ;;
    -h | --help | help) usage ;;
    *) usage ;;
  esac
}

main "$@"
