#!/usr/bin/env bash
# One entry point for a fresh Debian machine (run as root): installs what inart needs,
# idempotently, then runs the demo, the tests or another developer task.
#   ./dev.sh demo    set up, then run the main demo
#   ./dev.sh test    set up, then lint (ruff), build the guide (mkdocs) and run the tests (pytest)
#   ./dev.sh setup   set up only
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

# mininet: the emulated networks (emulation/network/); its Python module is linked into the
# venv below.  No openvswitch-switch: inart's Mininet networks have only P4 switch nodes.
# nftables: per-link packet loss in emulations (tc netem is missing from some kernels).
# python3-dev, gcc: the host stack's C extension (host_stack/ina/_batchio.c, setup.py).
# iperf3: the reference sender of `inart bench transport`.
# openssh-server (and its client): `inart run --inventory` reaches hosts over SSH; its test
# starts an sshd inside a namespace host (tests/realhost).
# python3-simgrid: the flow-level simulator behind `inart simulate` (SimGrid 3.32, prebuilt;
# linked into the venv below like Mininet).
# protobuf-compiler, protobuf-compiler-grpc, libprotobuf-dev: protoc, its gRPC plugin and the
# well-known .proto files, so tests/test_p4_stubs.py regenerates the P4Runtime stubs and compares.
# chromium, chromium-driver: the headless browser (driven by Selenium, a dev extra) that opens
# the live web view in its test (tests/browser.py); nothing is downloaded at test time.
APT_PACKAGES=(python3 python3-venv python3-dev gcc iproute2 iputils-ping ethtool procps mininet nftables
              iperf3 openssh-server python3-simgrid protobuf-compiler protobuf-compiler-grpc
              libprotobuf-dev chromium chromium-driver)
VENV=.venv
# apt and dpkg hold these (fcntl locks) while they run; another apt run (unattended-upgrades,
# a second terminal) makes apt-get fail at once unless it is told to wait.  The variables only
# let tests/test_dev_sh.py point dev.sh at a lock and a wait of its own.
read -r -a DPKG_LOCKS <<<"${DEV_SH_DPKG_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock}"
APT_LOCK_WAIT_S=${DEV_SH_APT_LOCK_WAIT_S:-600}

# "PID (command)" of a process that holds one of DPKG_LOCKS (from /proc/locks, matched by
# inode), or nothing
dpkg_lock_holder() {
    local lock inode pid command
    for lock in "${DPKG_LOCKS[@]}"; do
        [[ -e "$lock" ]] || continue
        inode=$(stat -c %i "$lock")
        # "1: POSIX ADVISORY WRITE PID MAJ:MIN:INODE START END"; waiters' lines have "->"
        pid=$(awk -v inode="$inode" '$2 != "->" { n = split($6, id, ":");
              if (id[n] == inode) { print $5; exit } }' /proc/locks)
        [[ -n "$pid" ]] || continue
        if [[ "$pid" -gt 0 && -r "/proc/$pid/cmdline" ]]; then
            command=$(tr '\0\n\t' '   ' <"/proc/$pid/cmdline" | tr -s ' ' | cut -c1-80)
            echo "$pid (${command% })"
        else
            echo "another process"
        fi
        return
    done
}

# Wait (up to APT_LOCK_WAIT_S) while another apt or dpkg run holds the lock, saying so once
wait_for_dpkg_lock() {
    local holder waited=0
    while holder=$(dpkg_lock_holder) && [[ -n "$holder" ]]; do
        if ((waited == 0)); then
            echo "dev.sh: waiting for the dpkg lock, held by $holder (up to ${APT_LOCK_WAIT_S} s)"
        elif ((waited >= APT_LOCK_WAIT_S)); then
            echo "dev.sh: error: the dpkg lock is still held by $holder after" \
                 "${APT_LOCK_WAIT_S} s; let that apt run finish, then run dev.sh again" >&2
            return 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
}

apt_setup() {
    local missing=()
    for p in "${APT_PACKAGES[@]}"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    if ((${#missing[@]})); then
        echo "dev.sh: installing Debian packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        wait_for_dpkg_lock
        # and apt-get itself waits for a lock taken between that check and its start
        apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT_S" update -q
        apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT_S" install -y -q \
            --no-install-recommends "${missing[@]}"
    fi
}

venv_setup() {
    local stamp="$VENV/.inart-stamp" want
    want=$(sha256sum pyproject.toml | cut -d' ' -f1)
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        return
    fi
    echo "dev.sh: preparing $VENV (first run installs PyTorch and friends)"
    [[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    # torch first and pinned, so no other requirement pulls a CUDA build
    "$VENV/bin/pip" install -q "torch==2.13.0"
    # p4runtime-shell and PyPI's p4runtime, which venvs made by earlier versions of this script
    # hold: p4runtime-shell now runs in its private environment (shell_env_setup)
    for old in p4runtime-shell p4runtime; do
        if "$VENV/bin/pip" show -q "$old" >/dev/null 2>&1; then
            "$VENV/bin/pip" uninstall -y -q "$old"
        fi
    done
    "$VENV/bin/pip" install -q -e ".[dev]"
    echo "$want" >"$stamp"
}

# p4runtime-shell's private environment (control_plane/shell_env: `inart shell` and `inart
# bench controller` run it there; it pins a protobuf this venv need not have), prepared now so
# that no command or test waits for it; nothing to do once it is there
shell_env_setup() {
    "$VENV/bin/python" -m control_plane.shell_env >/dev/null
}

# Debian installs Mininet's (pure Python) module and SimGrid's binding (a CPython 3.11
# extension) for the system python3 only; link them into the venv, whatever 3.11 the venv runs
# (Debian's python3 or another), instead of exposing all of dist-packages to the venv.
system_modules_setup() {
    local dist=/usr/lib/python3/dist-packages site name
    site=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    for name in mininet simgrid.cpython-311-x86_64-linux-gnu.so; do
        [[ -e "$dist/$name" && ! -e "$site/$name" ]] && ln -sfn "$dist/$name" "$site/$name"
    done
    return 0
}

# The C extension: `pip install -e` builds it once; this rebuilds it (in place, next to its
# source) whenever host_stack/ina/_batchio.c is newer than the built module, in every checkout.
native_setup() {
    "$VENV/bin/python" setup.py -q build_ext --inplace
}

setup() { apt_setup; venv_setup; system_modules_setup; native_setup; shell_env_setup; }

main() {
    case "${1:-}" in
        setup) setup ;;
        demo) setup; shift; exec "$VENV/bin/inart" demo "$@" ;;
        test)
            setup; shift
            "$VENV/bin/ruff" check .
            # the user guide (docs/, mkdocs.yml): --strict fails on a broken link or anchor
            NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict
            exec "$VENV/bin/python" -m pytest "$@"
            ;;
        *) echo "usage: ./dev.sh demo|test|setup [args...]" >&2; exit 2 ;;
    esac
}

# sourced (tests/test_dev_sh.py), it only defines the functions above
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    main "$@"
fi
