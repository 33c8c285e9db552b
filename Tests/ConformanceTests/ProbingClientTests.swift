import Conformance
import Foundation
import RangeServer
import TestSupport
import Testing

/// A careful downloader written for these tests, in Python with the standard library only: `MODE URL OUTPUT`.
///
/// It first probes the URL the way yt-dlp does (a GET whose first 512 bytes it reads before closing), then downloads,
/// retrying by itself up to ten times: it resumes with `Range` and `If-Range` (the strong ETag it saved beside the
/// output) from the bytes it has, takes a 200 as a new representation, and waits out 5xx and 429 answers. Modes:
/// - `careful`: resumes from exactly the bytes it has.
/// - `rounded`: resumes from the bytes it has rounded down to 64 KiB (as a downloader that writes in blocks does),
///   fetching up to 64 KiB again.
private struct CarefulDownloader {
    static let script = #"""
        import http.client, os, socket, sys, time, urllib.parse

        mode, url, output = sys.argv[1:4]
        parts = urllib.parse.urlsplit(url)
        path = parts.path + ("?" + parts.query if parts.query else "")
        etag_file = output + ".etag"

        def connect():
            return http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)

        # The probe: read the start, close with the rest unread.
        probe = connect()
        probe.request("GET", path)
        answer = probe.getresponse()
        answer.read(512)
        answer.close()
        probe.close()

        for attempt in range(10):
            size = os.path.getsize(output) if os.path.exists(output) else 0
            if mode == "rounded":
                size -= size % 65536
            etag = open(etag_file).read() if os.path.exists(etag_file) else None
            headers = {"Range": f"bytes={size}-", "If-Range": etag} if size and etag else {}
            try:
                connection = connect()
                connection.request("GET", path, headers=headers)
                response = connection.getresponse()
                if response.status in (429, 500, 502, 503, 504):
                    response.read()
                    time.sleep(float(response.getheader("Retry-After") or 1))
                    continue
                if response.status not in (200, 206):
                    print(f"HTTP {response.status}", file=sys.stderr)
                    sys.exit(22)
                tag = response.getheader("ETag")
                if tag and not tag.startswith("W/"):
                    with open(etag_file, "w") as f:
                        f.write(tag)
                elif os.path.exists(etag_file):
                    os.remove(etag_file)
                with open(output, "r+b" if response.status == 206 else "wb") as out:
                    if response.status == 206:
                        out.truncate(size)
                        out.seek(size)
                    while True:
                        chunk = response.read(65536)
                        if not chunk:
                            break
                        out.write(chunk)
                        out.flush()
                # http.client ends a body cut short quietly: what it still expected says so.
                if response.length:
                    raise http.client.IncompleteRead(b"", response.length)
                sys.exit(0)
            except (http.client.HTTPException, OSError) as error:
                print(f"attempt {attempt + 1}: {error!r}", file=sys.stderr)
                time.sleep(0.2)
        sys.exit(28)
        """#

    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "careful-client-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(Self.script.utf8).write(to: URL(fileURLWithPath: directory + "/downloader.py"))
    }

    func client(_ mode: String) throws -> SubprocessClient {
        try SubprocessClient.command("\(mode)=python3 \(directory)/downloader.py \(mode) {url} {output}")
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

/// Downloaders that probe first, or resume from a rounded offset, are judged on their downloads: the probe is counted
/// apart and does not use up the row's faulted attempt, and resuming from what was written is a cost.
@Suite(.serialized, .enabled(if: BuiltProducts.onPath("python3") != nil, "needs python3"))
struct ProbingClientTests {
    @Test(
        "a downloader that probes first passes plain and the drop and kill rows, its probes counted apart",
        arguments: ["plain", "drop-then-resume", "kill-at-25"])
    func probingDownloaderPasses(_ scenario: String) async throws {
        let downloader = try CarefulDownloader()
        defer { downloader.remove() }
        let cell = try await HarnessClientTests.run(scenario, try downloader.client("careful"))
        #expect(cell.result == .pass, "\(cell.result.label): \(cell.result.reason)")
        #expect(cell.notes.contains { $0.contains("probe") }, "notes: \(cell.notes)")
        // The probe gave its attempt back: the download itself met the row's drop and resumed after it.
        if scenario == "drop-then-resume", let trace = cell.trace {
            #expect(trace.requests.contains { $0.outcome == .dropped }, "the download never met the drop")
        }
    }

    @Test("a downloader resuming from a rounded offset passes drop-then-resume, the cost shown")
    func roundedResumePasses() async throws {
        let downloader = try CarefulDownloader()
        defer { downloader.remove() }
        let cell = try await HarnessClientTests.run("drop-then-resume", try downloader.client("rounded"))
        #expect(cell.result == .pass, "\(cell.result.label): \(cell.result.reason)")
        #expect(
            cell.notes.contains { $0.hasPrefix("resumed before the bytes received 1 time") }, "notes: \(cell.notes)")
    }
}
