# Shared by the scripts: find the repository, install what is missing, build.
# Sourced, not run.

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export REPO_ROOT

say() { printf '%s\n' "$*" >&2; }
die() { say "$(basename "$0"): $*"; exit 1; }

# Runs a command as root: directly when we are root, through sudo when it is there.
as_root() {
    if [ "$(id -u)" = 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        return 1
    fi
}

# apt_install PACKAGE...: installs Debian packages that are not installed yet; fast when all are present.
APT_UPDATED=""
apt_install() {
    local missing=()
    for package in "$@"; do
        dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null 2>&1 || return 1
    say "installing ${missing[*]} with apt-get"
    if [ -z "$APT_UPDATED" ]; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
        APT_UPDATED=1
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
}

# Makes sure libmicrohttpd's headers and pkg-config file are present.
ensure_libmicrohttpd() {
    if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists libmicrohttpd 2>/dev/null; then
        return 0
    fi
    case "$(uname -s)" in
        Linux)
            apt_install libmicrohttpd-dev pkg-config \
                || die "libmicrohttpd is missing and could not be installed: run 'sudo apt-get install libmicrohttpd-dev pkg-config' (or your distribution's equivalent)"
            ;;
        Darwin)
            command -v brew >/dev/null 2>&1 || die "libmicrohttpd is missing: install Homebrew, then 'brew install libmicrohttpd pkg-config'"
            brew install libmicrohttpd pkg-config >&2 || die "brew install libmicrohttpd failed"
            ;;
        *)
            die "libmicrohttpd is missing: install its development package (headers and pkg-config file)"
            ;;
    esac
}

ensure_swift() {
    command -v swift >/dev/null 2>&1 || die "the Swift toolchain is not on PATH: install Swift 6.2 or later from swift.org"
}

# Swift Testing starts every test of a run at once on the cooperative pool (one thread per core). With about 870
# tests on two cores, the first half minute queued the engine's actor behind hundreds of starting servers, and tests
# that wait for a paced download's progress timed out with nothing wrong (every run of d9b259f on a quiet machine
# failed so). At most 16 tests at a time keeps the run as short (97 s against 95) and those waits short.
# The variable is Swift Testing's own (experimental); a value already set wins.
limit_test_parallelism() {
    export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-16}"
}

# Python's h2 (PyPI) in a venv of its own, for scripts/lib/h2probe.py: the independent HTTP/2 client of the wire
# tests (RangeServerTests' HTTP2 suites find it at .build/h2-venv, or at $RANGE_TEST_H2_PYTHON).
H2_PROBE_VERSION="4.4.1"
ensure_h2_probe() {
    local venv="$REPO_ROOT/.build/h2-venv"
    if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import h2, sys; sys.exit(h2.__version__ != '$H2_PROBE_VERSION')" 2>/dev/null; then
        return 0
    fi
    if ! python3 -m venv "$venv" >&2; then
        apt_install python3-venv && python3 -m venv "$venv" >&2 || die "cannot create a Python venv in $venv"
    fi
    "$venv/bin/pip" install --quiet "h2==$H2_PROBE_VERSION" >&2 || die "pip install h2==$H2_PROBE_VERSION failed"
}
