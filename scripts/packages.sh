#!/usr/bin/env bash
# Debian packages of every part of rgpu, for Debian 12 (bookworm, amd64),
# from a build (docs/packages.md):
#
#   scripts/packages.sh [--build-dir DIR] [--out DIR] [--no-client-libs]
#
#   rgpud            the server, its CPU device and library stand-ins, its
#                    systemd unit, /etc/rgpu/rgpud.{toml,env}, user rgpud
#   rgpu-pool        the pool's scheduler, its unit, /etc/rgpu/pool.toml and
#                    rgpu-pool.env, user rgpu-pool, the lease-signing key
#   rgpu-tools       the rgpu command (run, pool, top, doctor, session) and
#                    the client library it preloads
#   rgpu-slurm       the Slurm plugin rgpu_spank.so and job_submit.lua
#                    (when the build has it: libslurm-dev)
#   rgpu-client-libs the client library under NVIDIA's sonames, for Debian
#                    13's CUDA PyTorch (scripts/torch-env.sh package)
#
# Dependencies on Debian's packages come from dpkg-shlibdeps. Prints the
# paths of the packages it wrote.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
out=""
client_libs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --no-client-libs) client_libs=0; shift ;;
    *) echo "usage: scripts/packages.sh [--build-dir DIR] [--out DIR] [--no-client-libs]" >&2; exit 2 ;;
  esac
done
build="$(readlink -f "$build")"
out="${out:-$build/packages}"
die() { echo "packages.sh: $*" >&2; exit 1; }
for f in bin/rgpud bin/rgpu-pool bin/rgpu bin/rgpu-doctor-probe lib/librgpu.so lib/librgpu-cpudev.so; do
  [ -e "$build/$f" ] || die "no $build/$f (run scripts/build.sh first)"
done
for tool in dpkg-deb dpkg-shlibdeps patchelf strip help2man; do
  command -v "$tool" >/dev/null || die "$tool is missing (apt-get install dpkg-dev patchelf binutils help2man)"
done
version="$("$build/bin/rgpu" --version | awk '{print $2}')"
[ -n "$version" ] || die "rgpu --version printed nothing"
debversion="$version-1"
# Who the packages are from: Debian's DEBFULLNAME and DEBEMAIL, as dch reads them.
maintainer="${DEBFULLNAME:-rgpu} <${DEBEMAIL:-rgpu@localhost}>"
mkdir -p "$out"
stage_top="$out/stage"
rm -rf "$stage_top"
prefix=/usr/lib/rgpu  # bin/ and lib/ as in the build: each program finds its parts beside it

is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }

# put SRC STAGE DEST [MODE]: a file into the stage; an ELF file stripped,
# with no search path but its own folder's where it needs one.
put() {
  local src="$1" stage="$2" dest="$3" mode="${4:-644}"
  install -D -m "$mode" "$src" "$stage$dest"
  if is_elf "$stage$dest"; then
    strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage$dest"
    if [ -n "$(patchelf --print-rpath "$stage$dest")" ]; then
      case "$(patchelf --print-rpath "$stage$dest")" in
        *'$ORIGIN'*) patchelf --set-rpath '$ORIGIN' "$stage$dest" ;;
        *) patchelf --remove-rpath "$stage$dest" ;;
      esac
    fi
  fi
}

# copyright and changelog, which every package carries.
put_docs() {
  local stage="$1" package="$2" doc="$1/usr/share/doc/$2"
  mkdir -p "$doc"
  cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: rgpu
Comment: built from rgpu's own sources by scripts/packages.sh; see docs/packages.md.

Files: *
Copyright: 2026 the rgpu authors
License: unlicensed
 rgpu has not chosen a license yet; until it does, no rights beyond running
 the software are granted.
EOF
  printf '%s (%s) unstable; urgency=medium\n\n  * Built from rgpu %s by scripts/packages.sh.\n\n -- %s  %s\n' \
    "$package" "$debversion" "$version" "$maintainer" "$(date -R -d @"${SOURCE_DATE_EPOCH:-$(date +%s)}")" |
    gzip -9n >"$doc/changelog.Debian.gz"
}

# The shlibs dependencies of the ELF files in a stage (its private
# libraries in usr/lib/rgpu/lib need none).
shlib_depends() {
  local stage="$1" tmp files=()
  while IFS= read -r -d '' f; do is_elf "$f" && files+=("$f"); done < <(find "$stage" -type f -print0)
  [ ${#files[@]} -gt 0 ] || return 0
  tmp="$(mktemp -d)"
  mkdir "$tmp/debian"
  printf 'Source: rgpu\n\nPackage: rgpu\nArchitecture: amd64\n' >"$tmp/debian/control"
  (cd "$tmp" && dpkg-shlibdeps -O --warnings=0 -l"$stage$prefix/lib" -e "${files[@]}" 2>/dev/null) |
    sed -n 's/^shlibs:Depends=//p'
  rm -rf "$tmp"
}

# build_deb STAGE PACKAGE "DEPENDS" "CONTROL LINES" "DESCRIPTION": writes
# DEBIAN/control and md5sums, and the package.
build_deb() {
  local stage="$1" package="$2" depends="$3" extra="$4" description="$5" shlibs
  put_docs "$stage" "$package"
  shlibs="$(shlib_depends "$stage")"
  depends="${shlibs}${shlibs:+${depends:+, }}${depends}"
  mkdir -p "$stage/DEBIAN"
  {
    echo "Package: $package"
    echo "Version: $debversion"
    echo "Architecture: amd64"
    echo "Maintainer: $maintainer"
    echo "Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)"
    [ -n "$depends" ] && echo "Depends: $depends"
    [ -n "$extra" ] && printf '%s\n' "$extra"
    echo "Section: misc"
    echo "Priority: optional"
    printf 'Description: %s\n' "$description"
  } >"$stage/DEBIAN/control"
  (cd "$stage" && find . -path ./DEBIAN -prune -o -type f -print0 | sort -z | xargs -0 md5sum | sed 's| \./| |') \
    >"$stage/DEBIAN/md5sums"
  if [ -d "$stage/etc" ]; then
    (cd "$stage" && find etc -type f | sort | sed 's|^|/|') >"$stage/DEBIAN/conffiles"
  fi
  chmod 755 "$stage"/DEBIAN/post* "$stage"/DEBIAN/pre* 2>/dev/null || true
  local deb="$out/${package}_${debversion}_amd64.deb"
  dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
  echo "$deb"
}

# A systemd unit from packaging/systemd, for this layout.
put_unit() {
  local stage="$1" unit="$2"
  mkdir -p "$stage/lib/systemd/system"
  sed -e 's|@RGPU_CONF_DIR@|/etc/rgpu|g' -e 's|@RGPU_BINDIR@|/usr/sbin|g' \
    "$root/packaging/systemd/$unit.service.in" >"$stage/lib/systemd/system/$unit.service"
  chmod 644 "$stage/lib/systemd/system/$unit.service"
}

# put_man STAGE PROGRAM SECTION "WHAT": a manual page made from the
# program's --help and --version (help2man), beside the full docs.
put_man() {
  local stage="$1" program="$2" section="$3" what="$4" dir="$1/usr/share/man/man$3"
  mkdir -p "$dir"
  help2man --no-info --section="$section" --name="$what" --version-string="$version" \
    --include=<(printf '[SEE ALSO]\nThe full documentation: /usr/share/doc/rgpu-tools/README, and docs/ in rgpu'"'"'s sources.\n') \
    "$build/bin/$program" | gzip -9n >"$dir/$program.$section.gz"
}

# The maintainer scripts' shared pieces: a system user, a random key.
user_snippet() {
  cat <<EOF
  if ! getent passwd $1 >/dev/null; then
    adduser --system --group --no-create-home --home /nonexistent --quiet $1
  fi
EOF
}
key_snippet() {  # FILE LINE-PREFIX: a file only root reads, made once
  cat <<EOF
  if [ ! -e $1 ]; then
    mkdir -p /etc/rgpu
    ( umask 077; printf '$2%s\\n' "\$(od -An -tx1 -N32 /dev/urandom | tr -d ' \\n')" >$1 )
  fi
EOF
}
service_snippet() {
  cat <<EOF
  if command -v deb-systemd-helper >/dev/null; then
    deb-systemd-helper unmask $1.service >/dev/null || true
    if deb-systemd-helper --quiet was-enabled $1.service; then
      deb-systemd-helper enable $1.service >/dev/null || true
    else
      deb-systemd-helper update-state $1.service >/dev/null || true
    fi
  fi
  if [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
  fi
EOF
}
postrm_snippet() {  # UNIT USER PATHS... (removed on purge)
  local unit="$1" user="$2"
  shift 2
  cat <<EOF
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
  systemctl --system daemon-reload >/dev/null || true
fi
if [ "\$1" = remove ] && command -v deb-systemd-helper >/dev/null; then
  deb-systemd-helper mask $unit.service >/dev/null || true
fi
if [ "\$1" = purge ]; then
  if command -v deb-systemd-helper >/dev/null; then
    deb-systemd-helper purge $unit.service >/dev/null || true
    deb-systemd-helper unmask $unit.service >/dev/null || true
  fi
  rm -rf $*
  if getent passwd $user >/dev/null && command -v deluser >/dev/null; then
    deluser --system --quiet $user || true
  fi
  rmdir /etc/rgpu 2>/dev/null || true
fi
EOF
}
prerm_snippet() {
  cat <<EOF
#!/bin/sh
set -e
if [ -d /run/systemd/system ] && [ "\$1" = remove ]; then
  deb-systemd-invoke stop $1.service >/dev/null || true
fi
EOF
}

# The tenants' keys (rgpud.keys) are shared by rgpud and rgpu-pool: made by
# whichever is installed first, removed on purge by the last one.
tenant_keys_purge='$(dpkg-query -W -f='"'"'${Status}'"'"' rgpud rgpu-pool 2>/dev/null | grep -q "install ok installed" || echo /etc/rgpu/rgpud.keys)'

# --- rgpud ---
s="$stage_top/rgpud"
put "$build/bin/rgpud" "$s" "$prefix/bin/rgpud" 755
for f in "$build"/lib/librgpu-cpudev.so "$build"/lib/librgpu-cpu-*.so; do put "$f" "$s" "$prefix/lib/$(basename "$f")"; done
mkdir -p "$s/usr/sbin"
ln -s ../lib/rgpu/bin/rgpud "$s/usr/sbin/rgpud"
put "$root/packaging/rgpud.toml" "$s" /etc/rgpu/rgpud.toml
put "$root/packaging/rgpud.env" "$s" /etc/rgpu/rgpud.env
put_unit "$s" rgpud
put_man "$s" rgpud 8 "rgpu's GPU server"
mkdir -p "$s/DEBIAN"
{
  printf '#!/bin/sh\nset -e\nif [ "$1" = configure ]; then\n'
  user_snippet rgpud
  # The groups that open GPU device files, where the host has them.
  printf '  for g in video render; do\n    if getent group $g >/dev/null; then adduser --quiet rgpud $g >/dev/null || true; fi\n  done\n'
  key_snippet /etc/rgpu/rgpud.keys "default "
  service_snippet rgpud
  printf 'fi\n'
} >"$s/DEBIAN/postinst"
prerm_snippet rgpud >"$s/DEBIAN/prerm"
postrm_snippet rgpud rgpud "$tenant_keys_purge" >"$s/DEBIAN/postrm"
build_deb "$s" rgpud "adduser" "Recommends: rgpu-tools" \
  "rgpu's GPU server: this host's GPUs, or a CPU device, for remote CUDA programs
 rgpud executes the CUDA calls of programs run through rgpu's client library
 on other hosts, over UCX (InfiniBand/RDMA, TCP or shared memory). Without a
 GPU it serves rgpu's CPU device, which runs PTX kernels and stands in for
 cuBLAS, cuDNN, cuFFT, cuRAND, cuSOLVER and cuSPARSE. Sessions are
 authenticated by tenant keys (/etc/rgpu/rgpud.keys, made at install with a
 random key for tenant 'default'), and devices are shared by exact slices."

# --- rgpu-pool ---
s="$stage_top/rgpu-pool"
put "$build/bin/rgpu-pool" "$s" "$prefix/bin/rgpu-pool" 755
mkdir -p "$s/usr/sbin"
ln -s ../lib/rgpu/bin/rgpu-pool "$s/usr/sbin/rgpu-pool"
put "$root/packaging/pool.toml" "$s" /etc/rgpu/pool.toml
put "$root/packaging/rgpu-pool.env" "$s" /etc/rgpu/rgpu-pool.env
put_unit "$s" rgpu-pool
put_man "$s" rgpu-pool 8 "rgpu's pool scheduler"
mkdir -p "$s/DEBIAN"
{
  printf '#!/bin/sh\nset -e\nif [ "$1" = configure ]; then\n'
  user_snippet rgpu-pool
  key_snippet /etc/rgpu/pool.key ""
  key_snippet /etc/rgpu/rgpud.keys "default "
  service_snippet rgpu-pool
  printf 'fi\n'
} >"$s/DEBIAN/postinst"
prerm_snippet rgpu-pool >"$s/DEBIAN/prerm"
postrm_snippet rgpu-pool rgpu-pool /etc/rgpu/pool.key /var/lib/rgpu-pool /var/lib/private/rgpu-pool "$tenant_keys_purge" >"$s/DEBIAN/postrm"
build_deb "$s" rgpu-pool "adduser" "Recommends: rgpu-tools" \
  "rgpu's pool scheduler: places remote GPU requests on registered rgpud servers
 rgpu-pool keeps the devices and slices of the rgpud servers registered with
 it, places clients' requests on them by policy, queues what does not fit
 with fair share between tenants and preemption by priority, and signs the
 leases the servers admit. Its lease-signing key (/etc/rgpu/pool.key) is
 made at install; give it to each rgpud of the pool."

# --- rgpu-tools ---
s="$stage_top/rgpu-tools"
put "$build/bin/rgpu" "$s" "$prefix/bin/rgpu" 755
put "$build/bin/rgpu-doctor-probe" "$s" "$prefix/bin/rgpu-doctor-probe" 755
put "$build/lib/librgpu.so" "$s" "$prefix/lib/librgpu.so"
mkdir -p "$s$prefix/lib/rgpu"
for f in "$build"/lib/rgpu/*; do ln -s ../librgpu.so "$s$prefix/lib/rgpu/$(basename "$f")"; done
if [ -d "$build/lib/rgpu-nvrtc" ]; then
  for f in "$build"/lib/rgpu-nvrtc/*; do put "$f" "$s" "$prefix/lib/rgpu-nvrtc/$(basename "$f")"; done
fi
mkdir -p "$s/usr/bin"
ln -s ../lib/rgpu/bin/rgpu "$s/usr/bin/rgpu"
put_man "$s" rgpu 1 "run CUDA programs on remote GPUs through rgpu"
put "$root/README.md" "$s" /usr/share/doc/rgpu-tools/README
build_deb "$s" rgpu-tools "" "Conflicts: rgpu-client-libs
Replaces: rgpu-client-libs" \
  "rgpu's command: run CUDA programs on remote GPUs, and the pool's tools
 The rgpu command runs an unmodified CUDA program with rgpu's client library
 preloaded, so that its CUDA calls go to an rgpud (rgpu run), asks rgpu-pool
 for devices (rgpu run --pool, rgpu pool status, rgpu pool hold), shows live
 metrics (rgpu top), checks a host's set-up (rgpu doctor) and lists or ends
 a server's sessions (rgpu session)."

# --- rgpu-slurm ---
if [ -f "$build/lib/rgpu_spank.so" ]; then
  s="$stage_top/rgpu-slurm"
  put "$build/lib/rgpu_spank.so" "$s" /usr/lib/x86_64-linux-gnu/slurm-wlm/rgpu_spank.so
  put "$root/slurm/job_submit.lua" "$s" /usr/share/doc/rgpu-slurm/examples/job_submit.lua
  printf 'required /usr/lib/x86_64-linux-gnu/slurm-wlm/rgpu_spank.so pool=POOLHOST:7100 rgpu=/usr/bin/rgpu\n' \
    >"$s/usr/share/doc/rgpu-slurm/examples/plugstack.conf"
  build_deb "$s" rgpu-slurm "rgpu-tools (= $debversion)" "Recommends: slurm-client
Enhances: slurmd, slurm-client
Breaks: slurmd (>= 22.06~), slurm-client (>= 22.06~)" \
    "rgpu's Slurm plugin: --rgpu=N gives a job's tasks remote GPUs from rgpu-pool
 A SPANK plugin for Slurm 22.05 adding --rgpu=N[,mem=SIZE][,share=F][,kind=K]
 to srun, sbatch and salloc: each task gets a lease from rgpu-pool and runs
 with rgpu's client library, and the leases are released when the step
 ends. With the example job_submit.lua and rgpu pool slurm-licenses, jobs
 wait in Slurm's queue for the pool's devices."
fi

rm -rf "$stage_top"
if [ "$client_libs" = 1 ]; then
  "$root/scripts/torch-env.sh" package --build-dir "$build" "$out/rgpu-client-libs_${version}_amd64.deb" >/dev/null
  echo "$out/rgpu-client-libs_${version}_amd64.deb"
fi
