import HTTPTypes

extension HTTPFields {
    /// The fields in order as (name, value) pairs, each name as it was given.
    var pairs: [(name: String, value: String)] { map { ($0.name.rawName, $0.value) } }

    /// Fields from (name, value) pairs in order.
    ///
    /// A pair whose name is not an HTTP token cannot be an `HTTPField`: it is left out here. Such a pair can reach
    /// the engine only through the deprecated tuple API, which keeps its pairs as given, and
    /// ``DownloadEngine/add(_:start:)`` refuses it by name.
    ///
    /// - Parameter pairs: the pairs.
    init(pairs: [(name: String, value: String)]) {
        self.init()
        for pair in pairs {
            if let name = HTTPField.Name(pair.name) { append(HTTPField(name: name, value: pair.value)) }
        }
    }
}
