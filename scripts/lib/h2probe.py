"""An independent HTTP/2 client for the wire tests of rangeserver's HTTP/2 listeners: Python's h2 (PyPI), not
SwiftNIO, reads the frames, so a test sees what a client sees.

    h2probe.py --host 127.0.0.1 --port N [--tls --ca FILE] [--window N] [--timeout S] [--ping-every S]
               [--flood-resets N] REQUEST...

Each REQUEST is a path, optionally with headers: `/bytes/1M?drop-after=1K|range=bytes=0-99|if-range="x"`
(`|:method=HEAD` replaces the method).
The requests are sent at once on one connection, each on its own stream (1, 3, 5, ...). The probe reads until
every stream has ended (END_STREAM or RST_STREAM), the connection closed, or the timeout passed, then prints one
JSON object: per stream its status, fields as received (names and values as sent, no validation), DATA length and
SHA-256, whether END_STREAM came and the RST_STREAM code; for the connection the GOAWAY frames (last stream id
and code), the server's SETTINGS, how many PINGs were answered, the ALPN protocol, and how it ended.

--http1 offers only `http/1.1` by ALPN and sends the first REQUEST as HTTP/1.1; the report then holds the chosen
protocol and the raw answer (`http1`).

--flood-resets N sends N HEADERS each followed at once by RST_STREAM(CANCEL) before the requests (the rapid-reset
pattern of CVE-2023-44487) and reports how far it got before the server closed the connection.
"""

import argparse
import hashlib
import json
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
import h2.stream

# The probe reports what came; the tests judge it. h2 ends the connection at a DATA length that disagrees with the
# stream's content-length (RFC 9113 §8.1.1), which is the very lie `length-delta` tells, so that check is off here.
h2.stream.H2Stream._track_content_length = lambda self, length, end_stream: None
# h2 closes its whole connection state on any GOAWAY, so the frames of streams a graceful GOAWAY lets finish (RFC 9113
# §6.8: streams up to the last-stream-id go on) would be refused: the closed state takes every input here.
for _input in h2.connection.ConnectionInputs:
    h2.connection.H2ConnectionStateMachine._transitions.setdefault(
        (h2.connection.ConnectionState.CLOSED, _input), (None, h2.connection.ConnectionState.CLOSED))


def parse_request(text):
    parts = text.split("|")
    headers = []
    for part in parts[1:]:
        name, _, value = part.partition("=")
        headers.append((name, value))
    return parts[0], headers


def http1(args):
    raw = socket.create_connection((args.host, args.port), timeout=args.timeout)
    context = ssl.create_default_context(cafile=args.ca)
    context.set_alpn_protocols(["http/1.1"])
    sock = context.wrap_socket(raw, server_hostname=args.host)
    path = args.requests[0] if args.requests else "/"
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {args.host}:{args.port}\r\nConnection: close\r\n\r\n".encode())
    answer = b""
    while True:
        try:
            data = sock.recv(65536)
        except (OSError, ssl.SSLError):
            break
        if not data:
            break
        answer += data
    json.dump({"alpn": sock.selected_alpn_protocol(), "http1": answer.decode("latin-1")}, sys.stdout)
    sys.stdout.write("\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tls", action="store_true")
    parser.add_argument("--ca")
    parser.add_argument("--window", type=int, default=16 * 1024 * 1024)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--ping-every", type=float, default=0.0)
    parser.add_argument("--flood-resets", type=int, default=0)
    parser.add_argument("--read-limit", type=int, default=0, help="stop granting window after this many bytes")
    parser.add_argument("--http1", action="store_true")
    parser.add_argument("requests", nargs="*")
    args = parser.parse_args()
    if args.http1:
        http1(args)
        return

    raw = socket.create_connection((args.host, args.port), timeout=args.timeout)
    alpn = None
    sock = raw
    if args.tls:
        context = ssl.create_default_context(cafile=args.ca)
        context.set_alpn_protocols(["h2"])
        sock = context.wrap_socket(raw, server_hostname=args.host)
        alpn = sock.selected_alpn_protocol()

    config = h2.config.H2Configuration(
        client_side=True,
        header_encoding="utf-8",
        validate_inbound_headers=False,
        normalize_inbound_headers=False,
        validate_outbound_headers=False,
    )
    conn = h2.connection.H2Connection(config=config)
    conn.local_settings = h2.settings.Settings(
        client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: min(args.window, 2**31 - 1)}
    )
    conn.initiate_connection()
    if args.window > 65535:
        conn.increment_flow_control_window(min(args.window, 2**31 - 1) - 65535)
    sock.sendall(conn.data_to_send())

    report = {"alpn": alpn, "streams": {}, "goaways": [], "settings": {}, "pingsAnswered": 0, "ended": None,
              "errors": [], "floodSent": 0}
    streams = report["streams"]
    hashes = {}
    authority = f"{args.host}:{args.port}"
    scheme = "https" if args.tls else "http"

    def base_headers(path):
        return [(":method", "GET"), (":path", path), (":scheme", scheme), (":authority", authority)]

    try:
        for _ in range(args.flood_resets):
            stream_id = conn.get_next_available_stream_id()
            conn.send_headers(stream_id, base_headers("/bytes/1K"), end_stream=True)
            conn.reset_stream(stream_id, error_code=h2.errors.ErrorCodes.CANCEL)
            report["floodSent"] += 1
            sock.sendall(conn.data_to_send())
    except (OSError, h2.exceptions.ProtocolError) as error:
        report["errors"].append(f"flood: {error}")

    for text in args.requests:
        path, extra = parse_request(text)
        try:
            stream_id = conn.get_next_available_stream_id()
            # A pseudo-header among the fields (`|:method=HEAD`) replaces the request's own.
            pseudo = dict(field for field in extra if field[0].startswith(":"))
            headers = [(name, pseudo.pop(name, value)) for name, value in base_headers(path)]
            headers += [field for field in extra if not field[0].startswith(":")]
            conn.send_headers(stream_id, headers, end_stream=True)
            streams[str(stream_id)] = {"path": path, "status": None, "headers": [], "bytes": 0, "endStream": False,
                                       "reset": None}
            hashes[stream_id] = hashlib.sha256()
            sock.sendall(conn.data_to_send())
        except (OSError, h2.exceptions.ProtocolError) as error:
            report["errors"].append(f"send {path}: {error}")

    def open_streams():
        return [s for s in streams.values() if not s["endStream"] and s["reset"] is None]

    deadline = time.monotonic() + args.timeout
    next_ping = time.monotonic() + args.ping_every if args.ping_every else None
    received_total = 0
    # After a GOAWAY h2's state machine is closed and takes no more frames: the probe then only watches for the close.
    parsing = True
    sock.settimeout(0.2)
    while time.monotonic() < deadline:
        if parsing and not args.flood_resets and streams and not open_streams():
            report["ended"] = "streams-done"
            break
        if args.flood_resets and report["goaways"]:
            report["ended"] = "goaway"
            break
        if next_ping and time.monotonic() >= next_ping:
            try:
                conn.ping(b"rangechk")
                sock.sendall(conn.data_to_send())
            except OSError as error:
                report["errors"].append(f"ping: {error}")
            next_ping = time.monotonic() + args.ping_every
        try:
            data = sock.recv(1 << 20)
        except socket.timeout:
            continue
        except (ConnectionResetError, ssl.SSLError, OSError) as error:
            report["ended"] = f"error: {type(error).__name__}"
            break
        if not data:
            report["ended"] = "closed"
            break
        if not parsing:
            continue
        try:
            events = conn.receive_data(data)
        except h2.exceptions.ProtocolError as error:
            if report["goaways"]:
                parsing = False
                continue
            report["errors"].append(f"protocol: {type(error).__name__}: {error}")
            report["ended"] = "protocol-error"
            break
        for event in events:
            if isinstance(event, h2.events.ResponseReceived):
                entry = streams.get(str(event.stream_id))
                if entry is not None:
                    for name, value in event.headers:
                        if name == ":status":
                            entry["status"] = int(value)
                        else:
                            entry["headers"].append([name, value])
            elif isinstance(event, h2.events.DataReceived):
                entry = streams.get(str(event.stream_id))
                if entry is not None:
                    entry["bytes"] += len(event.data)
                    hashes[event.stream_id].update(event.data)
                received_total += event.flow_controlled_length
                if not args.read_limit or received_total < args.read_limit:
                    try:
                        conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    except h2.exceptions.StreamClosedError:
                        conn.increment_flow_control_window(event.flow_controlled_length)
            elif isinstance(event, h2.events.StreamEnded):
                entry = streams.get(str(event.stream_id))
                if entry is not None:
                    entry["endStream"] = True
            elif isinstance(event, h2.events.StreamReset):
                entry = streams.get(str(event.stream_id))
                if entry is not None:
                    entry["reset"] = int(event.error_code)
            elif isinstance(event, h2.events.ConnectionTerminated):
                report["goaways"].append({"last": event.last_stream_id, "code": int(event.error_code)})
            elif isinstance(event, h2.events.RemoteSettingsChanged):
                for code, change in event.changed_settings.items():
                    report["settings"][str(int(code))] = change.new_value
            elif isinstance(event, h2.events.PingAckReceived):
                report["pingsAnswered"] += 1
        try:
            outgoing = conn.data_to_send()
            if outgoing:
                sock.sendall(outgoing)
        except OSError:
            pass
    else:
        report["ended"] = "timeout"
    for stream_id, digest in hashes.items():
        streams[str(stream_id)]["sha256"] = digest.hexdigest()
    try:
        sock.close()
    except OSError:
        pass
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
