import HTTPVocabulary
import Testing

@testable import RangeServer

@Suite("Response dates")
struct ResponseDateTests {
    @Test("the Date formatter writes IMF-fixdates, NUL-terminated, for any second")
    func dateFormatting() {
        for seconds: Int64 in [0, 784_111_777, 1_795_291_531, 951_782_400, 253_402_300_799, -1] {
            var buffer = [CChar](repeating: 1, count: 48)
            ResponseDate.format(seconds, into: &buffer, capacity: buffer.count)
            let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            #expect(text == HTTPDate(secondsSince1970: seconds).headerValue)
            if seconds >= 0 && seconds <= 253_402_300_799 {
                #expect(text == WireCheck.httpDate(seconds: Int(seconds)))
            }
        }
        #expect(String(cString: ResponseDate.current()).hasSuffix(" GMT"))
    }
}
