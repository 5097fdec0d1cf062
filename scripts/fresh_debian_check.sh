#!/usr/bin/env bash
# Runs the README's two commands, scripts/setup.sh then scripts/test.sh, on a
# fresh Debian 12 (bookworm) made with debootstrap: only Debian's python3, a
# stock PATH, no environment from this machine.
#
# usage: sudo scripts/fresh_debian_check.sh [REPO]     (default: this checkout)
#   FRESH_ROOT=dir   where the chroots live (default /srv): DIR/deb12-base is
#                    the untouched debootstrap output (made once, reused),
#                    DIR/deb12 a copy of it made afresh for every run
#   MIRROR=url       Debian mirror (default: the first non-security one in
#                    /etc/apt/sources.list*, else http://deb.debian.org/debian)
#
# REPO's committed HEAD is cloned into the chroot as /root/npullm (uncommitted
# changes are not tested). /proc, /sys and /dev are bind-mounted for the run
# and unmounted on exit, whatever happens. The only other things taken from
# the host are /etc/resolv.conf and the CA certificates in
# /usr/local/share/ca-certificates/ (a network that inspects TLS needs its
# CA; on a plain network that directory is empty). Prints a timed line per
# stage; exits with the first failing command's status.
set -euo pipefail
# All in a function: bash parses it whole before running it, so editing this
# file during a (long) run cannot change what the run does.
main() {
    [ "$(id -u)" -eq 0 ] || { echo "fresh_debian_check: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
    repo=$(cd "${1:-$(dirname "$0")/..}" && pwd)
    top=${FRESH_ROOT:-/srv}
    base=$top/deb12-base
    root=$top/deb12
    if [ -z "${MIRROR:-}" ]; then
        MIRROR=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs:[[:space:]]*//p' |
                 tr ' ' '\n' | grep -v security | head -n 1 || true)
        [ -n "$MIRROR" ] || MIRROR=$(sed -n 's/^deb[[:space:]]\+\(http[^[:space:]]*\).*/\1/p' /etc/apt/sources.list 2>/dev/null |
                                     grep -v security | head -n 1 || true)
        MIRROR=${MIRROR:-http://deb.debian.org/debian}
    fi

    t_start=$(date +%s)
    stage() { echo "fresh_debian_check: [$(date -u +%H:%M:%S), +$(($(date +%s) - t_start))s] $*"; }

    command -v debootstrap >/dev/null || { stage "apt-get install debootstrap"; apt-get install -y -qq debootstrap >/dev/null; }
    if [ ! -f "$base/etc/debian_version" ]; then
        stage "debootstrap bookworm $base $MIRROR"
        rm -rf "$base.tmp"
        debootstrap bookworm "$base.tmp" "$MIRROR" >"$top/deb12-debootstrap.log" 2>&1 ||
            { echo "fresh_debian_check: debootstrap failed; log $top/deb12-debootstrap.log" >&2; exit 1; }
        mv "$base.tmp" "$base"
    fi

    mounted=()
    cleanup() {
        local i
        for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
            umount "${mounted[i]}" || umount -l "${mounted[i]}" || echo "fresh_debian_check: could not unmount ${mounted[i]}" >&2
        done
    }
    trap cleanup EXIT
    # never delete through a mount left over from an interrupted run
    if grep -q " $root/" /proc/mounts; then
        echo "fresh_debian_check: something is still mounted under $root (umount it first)" >&2
        exit 1
    fi
    stage "fresh copy of the Debian 12 base: $root (debian_version $(cat "$base/etc/debian_version"))"
    rm -rf "$root"
    cp -a "$base" "$root"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
    git clone -q "$repo" "$root/root/npullm"
    stage "cloned $repo at $(git -C "$root/root/npullm" log -1 --format='%h %s' | cut -c1-80)"
    for m in proc sys dev; do
        mount --bind "/$m" "$root/$m"
        mounted+=("$root/$m")
    done

    in_chroot() {
        chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
            /bin/bash -c 'cd /root/npullm && "$@"' bash "$@"
    }
    stage "scripts/setup.sh"
    in_chroot scripts/setup.sh
    stage "scripts/setup.sh passed; python3 on PATH: $(in_chroot sh -c 'command -v python3'), scripts/python:" \
          "$(in_chroot scripts/python -c 'import sys; print(sys.prefix, "of", sys.base_prefix, sys.version.split()[0])')"
    stage "scripts/test.sh"
    in_chroot scripts/test.sh
    stage "scripts/test.sh passed"
}
main "$@"
