import HTTPVocabulary

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `Date` field value every response carries (RFC 9110 §6.6.1: an origin server with a clock must send it),
/// formatted once per second per thread.
///
/// libmicrohttpd formats its own `Date` for every response with `gmtime`, which takes glibc's time-zone lock on
/// every call from every pool thread. A response that already has a `Date` field gets none from libmicrohttpd, so
/// the daemon adds this one instead; libmicrohttpd's own error responses (a malformed request, headers too large)
/// still get libmicrohttpd's.
enum ResponseDate {
    /// The value for now, such as `Sun, 06 Nov 1994 08:49:37 GMT`, NUL-terminated.
    ///
    /// The pointer belongs to the calling thread and stays valid until that thread's next call in a later second,
    /// so it must be used (libmicrohttpd copies header values) before the thread asks again.
    static func current() -> UnsafePointer<CChar> {
        now().text
    }

    /// The value for now, as `current()` gives it, and the second it spells (seconds since 1970), so a caller that
    /// keeps a response can tell whether its `Date` is still current.
    static func now() -> (second: Int64, text: UnsafePointer<CChar>) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let second = Int64(now.tv_sec)
        return (second, cache.value(forSecond: second))
    }

    /// Formats `seconds` into `buffer` as an IMF-fixdate, NUL-terminated.
    static func format(_ seconds: Int64, into buffer: UnsafeMutablePointer<CChar>, capacity: Int) {
        let text = HTTPDate(secondsSince1970: seconds).headerValue
        var index = 0
        for byte in text.utf8 where index < capacity - 1 {
            buffer[index] = CChar(bitPattern: byte)
            index += 1
        }
        buffer[index] = 0
    }

    private static let cache = ThreadCache()

    /// Each thread's last second and its formatted value, in a thread-specific slot.
    private final class ThreadCache: Sendable {
        let key: pthread_key_t

        init() {
            var key = pthread_key_t()
            // The destructor frees a thread's entry when the thread exits.
            pthread_key_create(&key) { entry in
                entry.map { Entry.release($0) }
            }
            self.key = key
        }

        func value(forSecond second: Int64) -> UnsafePointer<CChar> {
            let entry: UnsafeMutablePointer<Entry>
            if let stored = pthread_getspecific(key) {
                entry = stored.assumingMemoryBound(to: Entry.self)
            } else {
                entry = Entry.allocate()
                pthread_setspecific(key, entry)
            }
            if entry.pointee.second != second {
                entry.pointee.second = second
                withUnsafeMutableBytes(of: &entry.pointee.text) { bytes in
                    ResponseDate.format(
                        second, into: bytes.baseAddress!.assumingMemoryBound(to: CChar.self), capacity: bytes.count)
                }
            }
            return UnsafeRawPointer(entry).advanced(by: MemoryLayout<Entry>.offset(of: \Entry.text)!)
                .assumingMemoryBound(to: CChar.self)
        }
    }

    /// One thread's cached value: plain memory, so reading it costs no reference counting.
    private struct Entry {
        var second: Int64 = .min
        /// 29 characters and the NUL, with room to spare for years past 9999.
        var text: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)

        static func allocate() -> UnsafeMutablePointer<Entry> {
            let entry = UnsafeMutablePointer<Entry>.allocate(capacity: 1)
            entry.initialize(to: Entry())
            return entry
        }

        static func release(_ raw: UnsafeMutableRawPointer) {
            let entry = raw.assumingMemoryBound(to: Entry.self)
            entry.deinitialize(count: 1)
            entry.deallocate()
        }
    }
}
