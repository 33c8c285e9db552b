# Debian's squid on loopback, for scripts that run a client through a real proxy. Sourced, after common.sh.
#
#   ensure_squid                     installs the squid package when it is missing
#   start_squid DIR [CONNECT_PORT]   starts squid with its shipped configuration (/etc/squid/squid.conf), changed
#                                    only in its port (a free one on 127.0.0.1), PID file and logs (in DIR), no ICMP
#                                    pinger and no wait at shutdown; with CONNECT_PORT, CONNECT may reach that port
#                                    too (the shipped rules allow 443 only). Sets SQUID_PORT and SQUID_PID.
#   stop_squid                       stops the squid start_squid started, by its PID
#
# Tests/DownloadEngineTests/Squid.swift derives the tests' configuration the same way.

ensure_squid() {
    [ -x /usr/sbin/squid ] && return 0
    apt_install squid || die "squid is missing and could not be installed: run 'sudo apt-get install squid'"
}

SQUID_PID=""
SQUID_PORT=""

start_squid() {
    local dir="$1" connect_port="${2:-}" attempt
    mkdir -p "$dir"
    # Started as root, squid runs as the `proxy` user and writes its logs here.
    chmod 0777 "$dir"
    for attempt in 1 2 3; do
        SQUID_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
        sed -e "s#^http_port .*#http_port 127.0.0.1:$SQUID_PORT#" -e "s#^coredump_dir .*#coredump_dir $dir#" \
            ${connect_port:+-e "s#^acl SSL_ports port 443\$#&\nacl SSL_ports port $connect_port#"} \
            /etc/squid/squid.conf >"$dir/squid.conf"
        cat >>"$dir/squid.conf" <<EOF
pid_filename $dir/squid.pid
access_log stdio:$dir/access.log
cache_log $dir/cache.log
pinger_enable off
shutdown_lifetime 0 seconds
EOF
        /usr/sbin/squid -N -f "$dir/squid.conf" >"$dir/squid.out" 2>&1 &
        SQUID_PID=$!
        if python3 - "$SQUID_PORT" "$SQUID_PID" <<'EOF'
import os, socket, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
for _ in range(200):  # 10 s
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit(1)
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit(1)
EOF
        then
            return 0
        fi
        stop_squid
    done
    say "squid did not start: $(tail -n 5 "$dir/cache.log" 2>/dev/null | tr '\n' ' ')"
    return 1
}

stop_squid() {
    [ -n "$SQUID_PID" ] || return 0
    # Nothing to keep (no disk cache, an unbuffered access log), and a clean stop takes a second or two.
    kill -KILL "$SQUID_PID" 2>/dev/null || true
    wait "$SQUID_PID" 2>/dev/null || true
    SQUID_PID=""
}
