extension FaultKey {
    /// `rst-code=NAME|N`: the error code of `rst-stream-after`'s RST_STREAM (RFC 9113 §7), INTERNAL_ERROR by default.
    static let rstCode = FaultKey(
        "rst-code", kind: .connection, valueForm: "an HTTP/2 error code name or number",
        placeholder: "NO_ERROR|PROTOCOL_ERROR|INTERNAL_ERROR|CANCEL|REFUSED_STREAM|ENHANCE_YOUR_CALM|N",
        example: "CANCEL", help: "with rst-stream-after, the RST_STREAM error code (default INTERNAL_ERROR)",
        expected: "an HTTP/2 error code: \(FaultPlan.StreamErrorCode.names.joined(separator: ", ")) or a number",
        merge: .follows("rst-stream-after"), needsBody: true, field: \.rstCode,
        parse: { FaultPlan.StreamErrorCode(parsing: $0) }, format: { $0.text })
}

extension FaultPlan {
    /// An HTTP/2 error code (RFC 9113 §7), as `rst-code` takes it: a registered name or any 32-bit number.
    package struct StreamErrorCode: Hashable, Sendable {
        /// The code on the wire.
        package var value: UInt32

        package init(_ value: UInt32) { self.value = value }

        /// NO_ERROR (0x0).
        package static let noError = StreamErrorCode(0x0)
        /// PROTOCOL_ERROR (0x1).
        package static let protocolError = StreamErrorCode(0x1)
        /// INTERNAL_ERROR (0x2).
        package static let internalError = StreamErrorCode(0x2)
        /// REFUSED_STREAM (0x7): the stream was not processed, and may be retried at once (RFC 9113 §8.7).
        package static let refusedStream = StreamErrorCode(0x7)
        /// CANCEL (0x8).
        package static let cancel = StreamErrorCode(0x8)
        /// ENHANCE_YOUR_CALM (0xb).
        package static let enhanceYourCalm = StreamErrorCode(0xb)

        /// RFC 9113 §7's names, by code.
        private static let registered: [(name: String, value: UInt32)] = [
            ("NO_ERROR", 0x0), ("PROTOCOL_ERROR", 0x1), ("INTERNAL_ERROR", 0x2), ("FLOW_CONTROL_ERROR", 0x3),
            ("SETTINGS_TIMEOUT", 0x4), ("STREAM_CLOSED", 0x5), ("FRAME_SIZE_ERROR", 0x6), ("REFUSED_STREAM", 0x7),
            ("CANCEL", 0x8), ("COMPRESSION_ERROR", 0x9), ("CONNECT_ERROR", 0xa), ("ENHANCE_YOUR_CALM", 0xb),
            ("INADEQUATE_SECURITY", 0xc), ("HTTP_1_1_REQUIRED", 0xd),
        ]

        /// The registered names, in code order.
        static var names: [String] { registered.map(\.name) }

        /// Reads a registered name (any case) or a decimal number up to 2^32-1; nil for anything else.
        init?(parsing text: String) {
            let upper = text.uppercased()
            if let known = Self.registered.first(where: { $0.name == upper }) {
                self.value = known.value
                return
            }
            guard let number = FaultPlan.decimalInt(text), let value = UInt32(exactly: number) else { return nil }
            self.value = value
        }

        /// The registered name, or the number for an unregistered code; `init(parsing:)` reads it back.
        package var text: String {
            Self.registered.first { $0.value == value }?.name ?? String(value)
        }
    }
}
