#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a system call until it is not interrupted by a signal (`EINTR`), and returns its last result.
func retryingOnInterrupt(_ call: () -> Int32) -> Int32 {
    var result: Int32
    repeat { result = call() } while result < 0 && errno == EINTR
    return result
}
