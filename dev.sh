#!/usr/bin/env bash
# One entry point for a fresh Debian machine (run as root): installs what inart needs,
# idempotently, then runs the demo, the tests or another developer task.
#   ./dev.sh demo    set up, then run the main demo
#   ./dev.sh test    set up, then lint (ruff), build the guide (mkdocs) and run the tests (pytest)
#   ./dev.sh setup   set up only
set -euo pipefail
cd "$(dirname "$0")"

# mininet: the emulated networks (emulation/network/); its Python module is linked into the
# venv below.  No openvswitch-switch: inart's Mininet networks have only P4 switch nodes.
# nftables: per-link packet loss in emulations (tc netem is missing from some kernels).
# python3-dev, gcc: the host stack's C extension (host_stack/ina/_batchio.c, setup.py).
# iperf3: the reference sender of `inart bench transport`.
# openssh-server (and its client): `inart run --inventory` reaches hosts over SSH; its test
# starts an sshd inside a namespace host (tests/realhost).
# python3-simgrid: the flow-level simulator behind `inart simulate` (SimGrid 3.32, prebuilt;
# linked into the venv below like Mininet).
APT_PACKAGES=(python3 python3-venv python3-dev gcc iproute2 iputils-ping ethtool procps mininet nftables
              iperf3 openssh-server python3-simgrid)
VENV=.venv
# p4runtime-shell (`inart shell`) pins protobuf<3.21 and p4runtime==1.4.1 in its metadata only;
# it runs on protobuf 6 with the project's own P4Runtime stubs (the `p4` package), so it is
# installed without its declared dependencies, plus what it imports at run time.
P4RUNTIME_SHELL=(p4runtime-shell==0.0.6)
P4RUNTIME_SHELL_RUNTIME=(ipython==7.31.1 jedi==0.17.2)

apt_setup() {
    local missing=()
    for p in "${APT_PACKAGES[@]}"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    if ((${#missing[@]})); then
        echo "dev.sh: installing Debian packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
}

venv_setup() {
    local stamp="$VENV/.inart-stamp" want
    want=$({ cat pyproject.toml; echo "${P4RUNTIME_SHELL[*]} ${P4RUNTIME_SHELL_RUNTIME[*]}"; } \
        | sha256sum | cut -d' ' -f1)
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        return
    fi
    echo "dev.sh: preparing $VENV (first run installs PyTorch and friends)"
    [[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    # torch first and pinned, so no other requirement pulls a CUDA build
    "$VENV/bin/pip" install -q "torch==2.13.0"
    # PyPI's p4runtime (left by venvs made before the `p4` package) would shadow that package
    # with stubs protobuf 6 refuses
    if "$VENV/bin/pip" show -q p4runtime >/dev/null 2>&1; then
        "$VENV/bin/pip" uninstall -y -q p4runtime
    fi
    "$VENV/bin/pip" install -q -e ".[dev]"
    "$VENV/bin/pip" install -q "${P4RUNTIME_SHELL_RUNTIME[@]}"
    "$VENV/bin/pip" install -q --no-deps "${P4RUNTIME_SHELL[@]}"
    echo "$want" >"$stamp"
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

setup() { apt_setup; venv_setup; system_modules_setup; native_setup; }

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
