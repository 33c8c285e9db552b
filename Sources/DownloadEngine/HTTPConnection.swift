import NIOCore

/// A connection of ``HTTPTransport``: the channel, the handler that routes its responses to the current
/// ``HTTPExchange``, and the pool key it belongs under.
final class HTTPConnection: Sendable {
    let channel: any Channel
    /// Only touched on the channel's event loop.
    let handler: HTTPResponseHandler
    /// The scheme, host and port (``HTTPTarget/poolKey``).
    let key: String
    /// The host and port, for error messages.
    let peer: String

    init(channel: any Channel, handler: HTTPResponseHandler, key: String, peer: String) {
        self.channel = channel
        self.handler = handler
        self.key = key
        self.peer = peer
    }
}
