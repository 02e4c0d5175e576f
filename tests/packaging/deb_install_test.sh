#!/bin/bash
# rgpu's Debian packages in a clean Debian 12 root (docs/packages.md):
#
#   tests/packaging/deb_install_test.sh BUILD_DIR
#
# Builds the packages (scripts/packages.sh), checks them with lintian (no
# error or warning but the tags docs/packages.md explains), installs them
# with apt into a copy of a minimal bookworm root (debootstrap, cached in
# ${RGPU_CACHE:-/var/cache/rgpu}/packages/ with the downloaded .debs), and
# inside it checks the system users and private keys the maintainer scripts
# made, starts rgpud and rgpu-pool as their users with the packaged
# configuration and keys (as the units pass them: credentials only the
# service reads), runs a driver API program through `rgpu run` with the
# tenant key, then purges everything and checks nothing is left.
# Needs root, debootstrap and the network the first time; skipped (77)
# without them, a failure when RGPU_TEST_STRICT=1 (CI).
set -euo pipefail
build="$(readlink -f "$1")"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
skip() {
  echo "skipped: $*" >&2
  if [ "${RGPU_TEST_STRICT:-}" = 1 ]; then exit 1; fi
  exit 77
}
[ "$(id -u)" = 0 ] || skip "debootstrap and chroot need root"
for tool in debootstrap unshare chroot lintian help2man dpkg-shlibdeps patchelf; do
  command -v "$tool" >/dev/null || skip "$tool is not installed"
done
cache="${RGPU_CACHE:-/var/cache/rgpu}/packages"
mirror="${RGPU_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
work="$(mktemp -d /tmp/rgpu-debs.XXXXXX)"
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# 1. The packages, and lintian.
DEBEMAIL=packages@rgpu-project.org "$repo/scripts/packages.sh" --build-dir "$build" --out "$work/debs" --no-client-libs
debs=("$work"/debs/*.deb)
[ ${#debs[@]} -ge 4 ] || fail "fewer than four packages: ${debs[*]}"
# Explained in docs/packages.md: local packages close no Debian bug.
lintian --suppress-tags initial-upload-closes-no-bugs --fail-on error,warning "${debs[@]}" ||
  fail "lintian found what docs/packages.md does not explain"
echo "ok: ${#debs[@]} packages, lintian clean but the explained tag"

# 2. A clean bookworm root (cached), and a copy to install into.
base="$cache/bookworm"
mkdir -p "$cache/archives/partial"
if [ ! -e "$base/.complete" ]; then
  rm -rf "$base.tmp"
  debootstrap --variant=minbase bookworm "$base.tmp" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
    skip "debootstrap failed (no network?); see $cache/debootstrap.log"
  printf '#!/bin/sh\nexit 101\n' >"$base.tmp/usr/sbin/policy-rc.d"  # no service starts in the root
  chmod 755 "$base.tmp/usr/sbin/policy-rc.d"
  touch "$base.tmp/.complete"
  mv "$base.tmp" "$base"
fi
root="$work/root"
cp -a "$base" "$root"
mkdir -p "$root/tmp/debs"
cp "${debs[@]}" "$root/tmp/debs/"
cp "$build/bin/rgpu-demo" "$root/tmp/rgpu-demo"  # a driver API program (not packaged)

# 3. What runs inside the root.
cat >"$root/tmp/inside.sh" <<'EOF'
#!/bin/sh
set -eu
fail() { echo "FAIL (in the root): $*" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends /tmp/debs/*.deb >/tmp/apt.log 2>&1 ||
  { tail -n 30 /tmp/apt.log >&2; fail "apt-get install of the packages failed"; }
echo "ok: installed with their dependencies: $(dpkg-query -W -f='${Package} ' rgpud rgpu-pool rgpu-tools rgpu-slurm)"

for u in rgpud rgpu-pool; do
  getent passwd "$u" >/dev/null || fail "no system user $u"
  [ "$(getent passwd "$u" | cut -d: -f7)" = /usr/sbin/nologin ] || fail "$u has a login shell"
done
for k in /etc/rgpu/rgpud.keys /etc/rgpu/pool.key; do
  [ "$(stat -c '%a %U' "$k")" = "600 root" ] || fail "$k is $(stat -c '%a %U' "$k"), not 600 root"
done
grep -Eq '^default [0-9a-f]{64}$' /etc/rgpu/rgpud.keys || fail "rgpud.keys has no default tenant key"
dpkg-query -W -f='${Conffiles}' rgpud | grep -q /etc/rgpu/rgpud.toml || fail "rgpud.toml is not a conffile"
[ -f /lib/systemd/system/rgpud.service ] && grep -q '^ExecStart=/usr/sbin/rgpud ' /lib/systemd/system/rgpud.service ||
  fail "rgpud.service does not run /usr/sbin/rgpud"
man_page=/usr/share/man/man8/rgpud.8.gz
[ -s "$man_page" ] || fail "no manual page $man_page"
echo "ok: users rgpud and rgpu-pool, keys 600 root, conffiles, units, manual pages"

# A service's credentials, as systemd's LoadCredential gives them.
credential() {  # USER NAME FILE
  mkdir -p "/run/cred-$1"
  install -o "$1" -m 400 "$3" "/run/cred-$1/$2"
  chown "$1" "/run/cred-$1"
  chmod 500 "/run/cred-$1"
}
listening() {  # LOG PREFIX
  for _ in $(seq 300); do
    a="$(sed -n "s/^$2 \([^ ]*\).*/\1/p" "$1" | head -n 1)"
    [ -n "$a" ] && { echo "$a"; return 0; }
    sleep 0.1
  done
  cat "$1" >&2
  fail "no '$2' in $1"
}
credential rgpud auth-keys /etc/rgpu/rgpud.keys
UCX_TLS=tcp RGPU_CPU_DEVICE_MEMORY=512M setpriv --reuid=rgpud --regid=rgpud --init-groups \
  /usr/sbin/rgpud --config /etc/rgpu/rgpud.toml --listen 127.0.0.1:0 --auth-file /run/cred-rgpud/auth-keys \
  >/tmp/rgpud.log 2>&1 &
rgpud=$!
server="$(listening /tmp/rgpud.log "rgpud listening on")"
[ "$(awk '/^Uid:/ {print $2}' "/proc/$rgpud/status")" = "$(id -u rgpud)" ] || fail "rgpud does not run as rgpud"

# A client with the tenant's key runs a driver API program.
umask 077
awk '$1 == "default" {print $2}' /etc/rgpu/rgpud.keys >/root/token
out="$(UCX_TLS=tcp RGPU_TENANT=default RGPU_AUTH_TOKEN_FILE=/root/token rgpu run --server "$server" -- /tmp/rgpu-demo 2>&1)" ||
  { echo "$out" >&2; cat /tmp/rgpud.log >&2; fail "rgpu-demo failed through the packaged rgpud"; }
echo "$out" | grep -q "done: ok" || fail "rgpu-demo did not finish: $out"
# Without the key the server refuses.
if UCX_TLS=tcp rgpu run --server "$server" -- /tmp/rgpu-demo >/tmp/nokey.out 2>&1; then fail "a client without the key got in"; fi
echo "ok: rgpud as user rgpud ran rgpu-demo for the default tenant, and refused a client without its key"

install -d -o rgpu-pool -m 700 /var/lib/rgpu-pool  # the unit's StateDirectory (the usage history)
credential rgpu-pool lease-key /etc/rgpu/pool.key
credential rgpu-pool tenant-keys /etc/rgpu/rgpud.keys
setpriv --reuid=rgpu-pool --regid=rgpu-pool --init-groups /usr/sbin/rgpu-pool --listen 127.0.0.1:0 \
  --key-file /run/cred-rgpu-pool/lease-key --auth-file /run/cred-rgpu-pool/tenant-keys --config /etc/rgpu/pool.toml \
  >/tmp/pool.log 2>&1 &
pool_pid=$!
pool="$(listening /tmp/pool.log "rgpu-pool listening on")"
rgpu pool status --pool "$pool" | grep -q "^servers: 0" || fail "rgpu pool status did not answer"
echo "ok: rgpu-pool as user rgpu-pool with the packaged key and pool.toml"
kill "$rgpud" "$pool_pid"
wait 2>/dev/null || true

apt-get purge -y -q rgpud rgpu-pool rgpu-tools rgpu-slurm >/tmp/purge.log 2>&1 || { cat /tmp/purge.log >&2; fail "purge failed"; }
[ ! -e /etc/rgpu ] || fail "/etc/rgpu is left after purge: $(ls -la /etc/rgpu)"
for u in rgpud rgpu-pool; do
  if getent passwd "$u" >/dev/null; then fail "user $u is left after purge"; fi
done
[ ! -e /usr/lib/rgpu ] || fail "/usr/lib/rgpu is left after purge"
[ ! -e /var/lib/rgpu-pool ] || fail "the pool's state is left after purge"
echo "ok: purge removed the keys, the configuration, the pool's state and the users"
EOF
chmod 755 "$root/tmp/inside.sh"

# 4. Into the root, in a mount namespace of its own (its mounts vanish with it).
unshare --mount --propagation private -- bash -c '
  set -e
  root="$1" cache="$2"
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --rbind /sys "$root/sys"  # UCX finds its network devices there
  mount -t tmpfs -o mode=755 tmpfs "$root/run"
  mount --bind "$cache/archives" "$root/var/cache/apt/archives"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 /tmp/inside.sh
' bash "$root" "$cache"
