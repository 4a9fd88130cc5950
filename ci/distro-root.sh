#!/usr/bin/env bash
# ci/distro-root.sh DIST [--] COMMAND...
#
# Runs COMMAND as root inside a Debian root of release DIST (e.g. trixie), made once with
# debootstrap and kept between runs at ${LOCKSTEP_DISTRO_CACHE:-/var/cache/lockstep/distro}/DIST.
# The root holds what ci/install-deps.sh installs (run inside it, as on a fresh machine), g++-13
# and g++-14, and a virtual environment with torch and the rest of ci/requirements.txt at
# /opt/lockstep-venv. It is how lockstep is built and tested on a second distribution and
# toolchain generation without a second machine (ci/distro-check.sh, ci/toolchain-check.sh).
#
# Inside, COMMAND sees /proc, /sys, /dev (with /dev/pts, /dev/shm), /usr/local/cuda (read-only,
# when the host has it) and this repository, at the same path as on the host; it starts in the
# current folder when that is inside the repository, else in the repository's root. The mounts
# are made in a mount namespace of the run's own (unshare): several runs can use one root at once.
#
# The root is made atomically: built in $cache/.DIST.building (resumed by the next run if a run
# was interrupted) and renamed to $cache/DIST only when complete, with the marker
# .lockstep-root-ready in it; a folder $cache/DIST without that marker is not ours and is
# refused. Mounts are always undone: by a trap, and by the kernel with the run's namespace on any
# end. Nothing is deleted.
#
# Environment: LOCKSTEP_DISTRO_CACHE (where roots live), LOCKSTEP_DISTRO_MIRROR (the Debian
# archive; default: the one this machine's apt uses, from /etc/apt/sources.list*).
# Exit status: COMMAND's; 3 when the root cannot be made or entered (a problem of the harness's
# setup, never a finding).
set -euo pipefail

usage() { echo "usage: ci/distro-root.sh DIST [--] COMMAND..." >&2; exit 3; }
die() { echo "distro-root: $*" >&2; exit 3; }

[[ $# -ge 2 ]] || usage
dist=$1; shift
[[ $dist =~ ^[a-z][a-z0-9-]*$ ]] || die "DIST '$dist' is not a Debian release name (e.g. trixie)"
[[ ${1:-} == -- ]] && shift
[[ $# -ge 1 ]] || usage
[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, mount, chroot); run it with sudo"

# Every run mounts in a mount namespace of its own: its mounts are invisible to the host and to
# other runs in the same root at the same time (ci/distro-check.sh and a toolchain check, say),
# and the kernel drops them when the run's last process ends, even after a SIGKILL.
own_namespace=$(readlink /proc/self/ns/mnt)
if [[ -z ${LOCKSTEP_DISTRO_ROOT_NS_FROM:-} || $own_namespace == "$LOCKSTEP_DISTRO_ROOT_NS_FROM" ]]; then
  command -v unshare >/dev/null || die "unshare (util-linux) is not installed"
  LOCKSTEP_DISTRO_ROOT_NS_FROM=$own_namespace exec unshare --mount --propagation private "$0" "$dist" -- "$@"
fi
unset LOCKSTEP_DISTRO_ROOT_NS_FROM

repo=$(cd "$(dirname "$0")/.." && pwd -P)
cache=${LOCKSTEP_DISTRO_CACHE:-/var/cache/lockstep/distro}
root=$cache/$dist
building=$cache/.$dist.building
ready_marker=.lockstep-root-ready
venv_in_root=/opt/lockstep-venv
# The compilers besides the distribution's default that the toolchain checks build with.
extra_packages=(g++-13 g++-14)

# --- mounts -------------------------------------------------------------------------------------
mounted=()   # mount points (host paths) in the order they were made; undone in reverse
unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null ||
      echo "distro-root: could not unmount ${mounted[i]}" >&2
  done
  mounted=()
}
on_signal() { unmount_all; trap - EXIT; exit 130; }
trap unmount_all EXIT
trap on_signal INT TERM HUP

# bind SRC DEST_IN_ROOT [ro]: DEST is created inside the root (a folder, or a file for a file).
bind() {
  local src=$1 dest=$2$3 ro=${4:-}
  [[ -e $src ]] || return 0
  if [[ -d $src ]]; then mkdir -p "$dest"; else mkdir -p "$(dirname "$dest")"; [[ -e $dest ]] || : >"$dest"; fi
  mount --bind "$src" "$dest"
  mounted+=("$dest")
  # A bind of a folder that has mounts below it would let them propagate; keep ours private.
  mount --make-private "$dest" 2>/dev/null || true
  if [[ $ro == ro ]]; then mount -o remount,bind,ro "$dest"; fi
}
mount_all() {
  local r=$1
  mkdir -p "$r/proc" "$r/sys" "$r/dev"
  mount -t proc proc "$r/proc"; mounted+=("$r/proc")
  bind /sys "$r" /sys ro
  bind /dev "$r" /dev
  bind /dev/pts "$r" /dev/pts
  bind /dev/shm "$r" /dev/shm
  if [[ -e /usr/local/cuda ]]; then
    bind "$(readlink -f /usr/local/cuda)" "$r" /usr/local/cuda ro
  fi
  bind "$repo" "$r" "$repo"
  # A git worktree's .git is a file naming the main checkout's git folder: bind that too, so that
  # git works inside the root.
  local common
  common=$(git -C "$repo" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
  if [[ -n $common && $common != "$repo"/* ]]; then bind "$common" "$r" "$common"; fi
  # pip's download cache is shared with the host: the torch wheels are gigabytes.
  mkdir -p /root/.cache/pip
  bind /root/.cache/pip "$r" /root/.cache/pip
  # Name resolution and the host's certificate authorities (the network may need them: this
  # machine's TLS is intercepted by a proxy whose CA only the host's bundle holds).
  # Copied under a name of this run's and renamed: runs in the same root at once each see a whole file.
  mkdir -p "$r/etc/lockstep"
  if cp -L /etc/resolv.conf "$r/etc/.resolv.conf.$$" 2>/dev/null; then mv -f "$r/etc/.resolv.conf.$$" "$r/etc/resolv.conf"; fi
  # The root runs under the host's name (same UTS namespace), so it needs the host's /etc/hosts:
  # debootstrap's names only localhost, where an installed Debian names its host too. Without it
  # the host name does not resolve inside the root, and torchrun --standalone (whose ranks meet at
  # the agent's host name) waits 2 x 300 s for a TCP store it cannot reach.
  if cp -L /etc/hosts "$r/etc/.hosts.$$" 2>/dev/null; then mv -f "$r/etc/.hosts.$$" "$r/etc/hosts"; fi
  cp -L /etc/ssl/certs/ca-certificates.crt "$r/etc/lockstep/.host-ca.$$"
  mv -f "$r/etc/lockstep/.host-ca.$$" "$r/etc/lockstep/host-ca-certificates.crt"
}

# in_root ROOT COMMAND...: COMMAND as root inside ROOT, with a clean environment plus the
# variables that configure lockstep, MPI and ccache.
in_root() {
  local r=$1; shift
  local cwd=$repo
  case $PWD/ in "$repo"/*) cwd=$PWD ;; esac
  local envs=(
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}"
    SSL_CERT_FILE=/etc/lockstep/host-ca-certificates.crt
    PIP_CERT=/etc/lockstep/host-ca-certificates.crt
    REQUESTS_CA_BUNDLE=/etc/lockstep/host-ca-certificates.crt
    GIT_SSL_CAINFO=/etc/lockstep/host-ca-certificates.crt
    CURL_CA_BUNDLE=/etc/lockstep/host-ca-certificates.crt
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_DEFAULT_TIMEOUT=180
    CCACHE_DIR=/var/cache/ccache
    "LOCKSTEP_VENV=$venv_in_root"
    "LOCKSTEP_DISTRO=$dist"
  )
  # The toolkit as this machine sets it up (its /etc/profile.d, NVIDIA's post-install steps): nvcc
  # on PATH, which torch's CMake config needs to enable CUDA, and the driver's stub for linking.
  if [[ -x $r/usr/local/cuda/bin/nvcc ]]; then
    envs[0]=PATH=/usr/local/cuda/bin:${envs[0]#PATH=}
    envs+=(CUDA_HOME=/usr/local/cuda LIBRARY_PATH=/usr/local/cuda/lib64/stubs)
  fi
  local v
  while IFS= read -r v; do envs+=("$v"); done < <(env | grep -E '^(LOCKSTEP_|OMPI_|CCACHE_MAXSIZE=|CTEST_)' |
    grep -vE '^(LOCKSTEP_VENV|LOCKSTEP_DISTRO|LOCKSTEP_DISTRO_CACHE|LOCKSTEP_DISTRO_MIRROR)=' || true)
  # -- keeps COMMAND's own arguments away from bash's.
  chroot "$r" /usr/bin/env -i "${envs[@]}" /bin/bash -c 'cd "$1" && shift && exec "$@"' \
    distro-root "$cwd" "$@"
}

# --- making the root ----------------------------------------------------------------------------
# The archive this machine's apt uses (its main suite, not -security or -updates), which also
# serves the other releases.
host_mirror() {
  local codename files
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  files=$(ls /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [[ -n $files ]] || return 0
  # shellcheck disable=SC2086
  awk -v codename="$codename" '
    # one-line format: deb [options] URI SUITE COMPONENTS...
    /^[[:space:]]*deb[[:space:]]/ {
      n = split($0, w, /[[:space:]]+/); i = 2
      if (w[i] ~ /^\[/) { while (i <= n && w[i] !~ /\]$/) i++; i++ }
      if (w[i + 1] == codename) { print w[i]; exit }
    }
    # deb822 format: stanzas of URIs: and Suites:
    /^URIs:/   { uris = $2 }
    /^Suites:/ { for (j = 2; j <= NF; j++) if ($j == codename && uris != "") { print uris; exit } }
    /^[[:space:]]*$/ { uris = "" }
  ' $files
}
security_mirror() {
  local m=$1
  case $m in */debian) echo "${m}-security" ;; *) echo "" ;; esac
}

make_root() {
  if ! command -v debootstrap >/dev/null; then
    # Installed when missing, as ci/install-deps.sh installs what the build needs: a fresh CI
    # machine makes its root unattended.
    echo "distro-root: installing debootstrap"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap; } ||
      die "debootstrap is not installed and apt-get could not install it"
  fi
  [[ -e /usr/share/debootstrap/scripts/$dist ]] ||
    die "this debootstrap does not know '$dist' (/usr/share/debootstrap/scripts/$dist)"
  local mirror=${LOCKSTEP_DISTRO_MIRROR:-$(host_mirror)}
  [[ -n $mirror ]] || die "no Debian mirror found in /etc/apt/sources.list*; set LOCKSTEP_DISTRO_MIRROR"
  mirror=${mirror%/}
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg

  if [[ -d $building ]]; then
    [[ -e $building/.lockstep-building ]] || die "$building exists but was not made by this script; remove it or set LOCKSTEP_DISTRO_CACHE"
    echo "distro-root: resuming the interrupted build in $building"
  else
    mkdir -p "$building"
    date -u +%FT%TZ >"$building/.lockstep-building"
  fi

  if [[ ! -e $building/.lockstep-stage-debootstrap ]]; then
    echo "distro-root: debootstrap $dist from $mirror into $building (minutes)"
    debootstrap --variant=minbase --keyring="$keyring" --include=ca-certificates,sudo,git,locales \
      "$dist" "$building" "$mirror" || die "debootstrap failed (its log: $building/debootstrap/debootstrap.log)"
    local security
    security=$(security_mirror "$mirror")
    rm -f "$building/etc/apt/sources.list"   # debootstrap's own one-liner, replaced just below
    {
      printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: main\nSigned-By: %s\n' \
        "$mirror" "$dist" "$dist" "/usr/share/keyrings/debian-archive-keyring.gpg"
      if [[ -n $security ]]; then
        printf '\nTypes: deb\nURIs: %s\nSuites: %s-security\nComponents: main\nSigned-By: %s\n' \
          "$security" "$dist" "/usr/share/keyrings/debian-archive-keyring.gpg"
      fi
    } >"$building/etc/apt/sources.list.d/debian.sources"
    # Services must not start inside a chroot.
    printf '#!/bin/sh\nexit 101\n' >"$building/usr/sbin/policy-rc.d"
    chmod +x "$building/usr/sbin/policy-rc.d"
    : >"$building/.lockstep-stage-debootstrap"
  fi

  mount_all "$building"
  echo "distro-root: ci/install-deps.sh inside the root, and ${extra_packages[*]}"
  in_root "$building" ci/install-deps.sh || die "ci/install-deps.sh failed inside $building"
  in_root "$building" bash -c 'export DEBIAN_FRONTEND=noninteractive; apt-get install -y -qq --no-install-recommends "$@"' \
    apt "${extra_packages[@]}" || die "installing ${extra_packages[*]} failed inside $building"
  in_root "$building" bash -c 'apt-get clean' || true
  unmount_all

  {
    echo "dist: $dist"
    echo "mirror: $mirror"
    echo "made: $(date -u +%FT%TZ)"
    echo "venv: $venv_in_root"
  } >"$building/$ready_marker"
  mv -T "$building" "$root"
  echo "distro-root: $root is ready"
}

mkdir -p "$cache"
if [[ ! -e $root/$ready_marker ]]; then
  [[ -e $root ]] && die "$root exists but has no $ready_marker: not a root this script made; remove it or set LOCKSTEP_DISTRO_CACHE"
  # One builder at a time; a second run waits for the first and then uses its root.
  exec 9>"$cache/.$dist.lock"
  flock 9
  if [[ ! -e $root/$ready_marker ]]; then make_root; fi
  flock -u 9
fi

mount_all "$root"
set +e
in_root "$root" "$@"
status=$?
set -e
unmount_all
exit "$status"
