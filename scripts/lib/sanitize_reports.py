"""Classifies the reports scripts/sanitize collected: each one is a known toolchain problem (docs/reliability.md,
"Sanitizers") or unknown, and any unknown one fails the run.

    python3 scripts/lib/sanitize_reports.py .build/reports/sanitize-thread
    python3 scripts/lib/sanitize_reports.py --self-test fixtures/sanitizers/reports

Prints every unknown report (its first lines) and a count per known family to stderr, and "TOTAL UNKNOWN" to stdout.
A report is known by its stacks, never by a file name alone:

ThreadSanitizer
- "swift-subprocess behind Synchronization.Mutex": the racing access (the SUMMARY line) is inside swift-subprocess,
  whose state sits behind Synchronization.Mutex, which TSan cannot see on Linux
  (fixtures/sanitizers/mutex-false-positive.swift).
- "NIO pooled receive buffer reused" and "NIOSSL read buffer reused": a data race whose racing access is a write to a
  ByteBuffer's storage (frame #0 in `ByteBuffer._Storage`) made while NIO's pooled receive-buffer allocator
  (`NIOPooledRecvBufferAllocator`) or NIOSSL's decryption (`SSLConnection.readDataFromNetwork`) refills its own
  buffer, and whose previous access is the engine's hash thread reading a part (`HashPipeline.submit`'s closure).
  Both owners write there only once their reference is the only one (a uniqueness check), which the hash thread's
  release ordered; the release and the check are in the Swift runtime, which TSan does not see
  (Tests/DownloadEngineTests/TLSReadBufferTests.swift shows the rule for NIOSSL).
- "NIOHTTP2 frame buffer reused": the same over HTTP/2: the racing write is to the storage of the buffer NIOHTTP2's
  frame decoder (`HTTP2FrameDecoder`) accumulates received bytes in, a DATA frame's payload being a slice of it that
  the hash thread read. `ByteBuffer` reallocates in place only once its storage is uniquely referenced (otherwise it
  copies), and the hash thread's release of the slice is what made it unique.
- "continuation hand-off (Swift runtime)": a data race between a task resumed from a continuation and the thread
  that resumed it: the racing access is in the resumed partial function of `withUnsafe(Throwing)Continuation` or
  `withChecked(Throwing)Continuation` (frame #0 ends in `TY<n>_`, frame #1 is the runtime's
  `runJobInEstablishedExecutorContext`), the previous one is `UnsafeContinuation.resume` or
  `CheckedContinuation.resume` on the other thread. The runtime orders the two (the resume publishes the task with an
  atomic status change before it is enqueued), in libswift_Concurrency and libdispatch, which TSan does not see
  (fixtures/sanitizers/continuation-handoff.swift shows it without our code).

LeakSanitizer (each leak record is one report)
- "toolchain library": the allocation site (the first frame past the allocator, the Swift runtime and the standard
  library) is in Foundation, FoundationEssentials, CoreFoundation, XCTest or libcurl, or in the runtime's side
  tables (fixtures/sanitizers/empty-file-leak.swift, swiftlang/swift-corelibs-foundation#3260,
  swiftlang/swift-corelibs-xctest#521, llvm/llvm-project#56751).
- "held by a toolchain leak": an indirect leak (reachable only from leaked memory) allocated outside Sources/: what
  Foundation's leaked objects hold.
- "indirect enum payload (LocatedJSON)": allocated by the scenario loader's JSON parser (`LocatedJSONParser`): the
  boxes of the indirect enum `LocatedJSON.Kind` and what they hold, alive in a loaded scenario's `expect` section at
  exit. A box is referenced through a pointer carrying the enum's case in its spare bits, which LeakSanitizer does
  not follow (fixtures/sanitizers/indirect-enum-leak.swift); a scenario that really leaked would be reported at its
  own allocation, which is not in the parser.
- "NIO IPv6 address (multi-payload enum payload)": a direct leak of the `Box` that NIOCore's
  `SocketAddress.IPv6Address.init` allocates (the allocation site is `Box.init`, the next frame that initializer).
  `SocketAddress` is an enum whose cases each hold one class reference; for `.v6`, its second case, the reference is
  stored with the tag 0x4 in its spare high bits, which LeakSanitizer does not follow
  (fixtures/sanitizers/multi-payload-enum-leak.swift). AsyncHTTPClient's connection pool keeps the address in its
  key, and an idle-connection timer on NIO's singleton event loop keeps the pool alive past a client's shutdown until
  it fires, so a process that asked for `[::1]` less than that timeout before exiting shows one such box (the chain,
  found with gdb, is in docs/reliability.md). An IPv4 address, the first case, is a plain pointer and never shows.
- "NIO thread pool queue (multi-payload enum payload)": a direct leak of the `Deque` storage that
  `NIOThreadPool._start` allocates for its work queue (the allocation site is in `DequeModule`, the first frame past it
  `NIOThreadPool._start`). The pool keeps the queue in `State.running(Deque)`, a case of a multi-payload enum beside
  `shuttingDown([Bool])`, so the reference carries the case in its spare bits, which LeakSanitizer does not follow,
  as for the IPv6 address above. The pool is NIO's singleton (`NIOThreadPool.singleton`, which the HTTP/2 listener
  hashes large representations on), alive until the process exits.
Any other leak allocated in Sources/ is unknown, direct or indirect.

`--self-test DIR` classifies the fixture reports in DIR (fixtures/sanitizers/reports: one report a file, its first
line `expect: FAMILY` or `expect: unknown`) and fails on any other answer; scripts/reliability runs it.
"""

import collections
import pathlib
import re
import sys

START = re.compile(r"^(WARNING: ThreadSanitizer|==\d+==ERROR: AddressSanitizer|(Direct|Indirect) leak of)", re.M)
# A frame: `#N 0xADDR in FUNCTION` or `#N 0xADDR (MODULE+0xOFFSET)` (AddressSanitizer), `#N FUNCTION` (TSan).
FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ in (\S+)|^\s*#\d+ 0x[0-9a-f]+\s+\((\S+?)\+|^\s*#\d+ (?!0x)(\S+)", re.M)
RUNTIME = re.compile(
    r"^(malloc|calloc|realloc|strdup|posix_memalign|memalign|aligned_alloc|_Zn[wa]m|swift_|\$ss|\$sS[aSs]"
    r"|/opt/swift/usr/lib/swift/linux/libswiftCore)"
)
TOOLCHAIN = re.compile(r"Foundation|_CF|XCTest|libcurl|swift::RefCounts")
OURS = re.compile(r"/Sources/(RangeServer|DownloadEngine|Conformance|HTTPVocabulary|SystemCalls|CMicroHTTPD|Range\w+Command)/")
LOCATED_JSON = re.compile(r"^\$s11RangeServer17LocatedJSONParserV")
NIO_BOX_INIT = re.compile(r"^\$s7NIOCore3BoxC\w*fC$")
IPV6_ADDRESS_INIT = re.compile(r"^\$s7NIOCore13SocketAddressO04IPv6C0V\w*fC$")
DEQUE = re.compile(r"^\$s11DequeModule0A0V")
THREAD_POOL_START = re.compile(r"^\$s8NIOPosix13NIOThreadPoolC6_start")

# The partial function a task resumes in after `with(Unsafe|Checked)(Throwing)Continuation`, and the resume.
RESUMED = re.compile(r"^\$ss\d+with(Unsafe|Checked)(Throwing)?Continuation\w*TY\d+_$")
RESUMER = re.compile(r"^\$sSc[cC]6resume")
STORAGE_WRITE = re.compile(r"^\$s7NIOCore10ByteBufferV8_StorageC")
HASH_THREAD = re.compile(r"^\$s14DownloadEngine12HashPipelineC6submit")
REFILLS = {
    "NIO pooled receive buffer reused": re.compile(r"^\$s7NIOCore28NIOPooledRecvBufferAllocatorV"),
    "NIOSSL read buffer reused": re.compile(r"^\$s6NIOSSL13SSLConnectionC19readDataFromNetwork"),
    "NIOHTTP2 frame buffer reused": re.compile(r"^\$s8NIOHTTP217HTTP2FrameDecoderV"),
}


def names(text):
    """The function (or module) of every stack frame in `text`, in order."""
    return [a or b or c for a, b, c in FRAME.findall(text)]


def thread_family(block):
    summary = re.search(r"^SUMMARY: ThreadSanitizer: .*$", block, re.M)
    if summary and "/swift-subprocess/Sources/Subprocess/" in summary.group(0):
        return "swift-subprocess behind Synchronization.Mutex"
    if not block.startswith("WARNING: ThreadSanitizer: data race"):
        return None
    previous = block.find("\n  Previous read of ")
    racing = block.split("\n", 2)[1] if "\n" in block else ""
    if previous < 0 or not racing.lstrip().startswith("Write of "):
        return None
    end = block.find("\n\n", previous)
    current, earlier = names(block[:previous]), names(block[previous : end if end >= 0 else len(block)])
    if (
        len(current) > 1
        and RESUMED.search(current[0])
        and current[1].startswith("swift::runJobInEstablishedExecutorContext")
        and earlier
        and RESUMER.search(earlier[0])
    ):
        return "continuation hand-off (Swift runtime)"
    if not current or not STORAGE_WRITE.search(current[0]) or not any(HASH_THREAD.search(n) for n in earlier):
        return None
    return next((family for family, refill in REFILLS.items() if any(refill.search(n) for n in current)), None)


def leak_family(block):
    frames = names(block)
    site = next((name for name in frames if not RUNTIME.search(name)), "")
    if TOOLCHAIN.search(site) or site.startswith("swift::"):
        return "toolchain library"
    if LOCATED_JSON.search(site):
        return "indirect enum payload (LocatedJSON)"
    if block.startswith("Direct") and NIO_BOX_INIT.search(site):
        after = frames[frames.index(site) + 1 :]
        if after and IPV6_ADDRESS_INIT.search(after[0]):
            return "NIO IPv6 address (multi-payload enum payload)"
    if block.startswith("Direct") and DEQUE.search(site):
        after = [name for name in frames[frames.index(site) + 1 :] if not DEQUE.search(name)]
        if after and THREAD_POOL_START.search(after[0]):
            return "NIO thread pool queue (multi-payload enum payload)"
    if block.startswith("Indirect") and not OURS.search(block):
        return "held by a toolchain leak"
    return None


def family(block):
    if block.startswith(("Direct leak", "Indirect leak")):
        return leak_family(block)
    if block.startswith("WARNING: ThreadSanitizer"):
        return thread_family(block)
    return None  # an AddressSanitizer error is never known


def main(directory):
    total = unknown = 0
    known = collections.Counter()
    for path in sorted(pathlib.Path(directory).glob("report.*")):
        text = path.read_text(errors="replace")
        starts = [m.start() for m in START.finditer(text)] + [len(text)]
        for begin, end in zip(starts, starts[1:]):
            block = text[begin:end]
            total += 1
            name = family(block)
            if name:
                known[name] += 1
            else:
                unknown += 1
                print(f"scripts/sanitize: report in {path}:", file=sys.stderr)
                print("\n".join(block.splitlines()[:14]), file=sys.stderr)
    for name, count in sorted(known.items()):
        print(f"scripts/sanitize: known: {count} x {name}", file=sys.stderr)
    print(total, unknown)


def self_test(directory):
    """Classifies each fixture report: the known families as they were reported, and reports one change away from
    a known one (an IPv4 box, a leak allocated in Sources/, a NIOSSL race without the hash thread), which must stay
    unknown."""
    failures = 0
    paths = sorted(pathlib.Path(directory).glob("*.txt"))
    for path in paths:
        expect, _, block = path.read_text().partition("\n")
        wanted = expect.removeprefix("expect: ")
        got = family(block) or "unknown"
        if got != wanted:
            failures += 1
            print(f"sanitize_reports: {path}: classified as {got!r}, expected {wanted!r}", file=sys.stderr)
    if not paths:
        print(f"sanitize_reports: no fixture reports in {directory}", file=sys.stderr)
        return 1
    print(f"sanitize_reports: {len(paths) - failures} of {len(paths)} fixture reports classified as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--self-test"]:
        sys.exit(self_test(sys.argv[2]))
    main(sys.argv[1])
