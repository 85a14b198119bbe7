/// What a responder does with a request: answer now, or suspend the connection and answer later.
public enum HTTPHandlerResult: Sendable {
    case response(HTTPResponse)
    case suspend(HTTPSuspension)
}

/// A request to park a connection without holding a thread (`MHD_suspend_connection`).
public struct HTTPSuspension: Sendable {
    /// Makes the answer given if the server stops while the connection is still suspended; called then (possibly
    /// before `register` ran, when the server stops in between), so it can tell what is true at that moment.
    public var shutdownResponse: @Sendable () -> HTTPResponse
    /// Called on the handler's thread right after the connection is suspended (also while the server stops: an
    /// answer it gives at once wins over `shutdownResponse`); it publishes the handle through which any thread
    /// later answers. It may call `resume(with:)` itself.
    public var register: @Sendable (HTTPSuspendedConnection) -> Void

    public init(
        shutdownResponse: @escaping @Sendable () -> HTTPResponse,
        register: @escaping @Sendable (HTTPSuspendedConnection) -> Void
    ) {
        self.shutdownResponse = shutdownResponse
        self.register = register
    }

    /// A suspension whose shutdown answer is always `shutdownResponse`.
    public init(shutdownResponse: HTTPResponse, register: @escaping @Sendable (HTTPSuspendedConnection) -> Void) {
        self.init(shutdownResponse: { shutdownResponse }, register: register)
    }
}

/// The application side of an `HTTPServer`.
///
/// Both methods run on the server's worker threads, concurrently; they must not block for long.
public protocol HTTPResponder: Sendable {
    func respond(to request: consuming HTTPRequest) -> HTTPHandlerResult
    /// The answer to a request whose body went over the limit; the body has been read and dropped.
    func respondToOversizedBody(_ request: HTTPRequest, limit: Int) -> HTTPResponse
    /// The answer to a request refused for its framing (`status` 400 or 501, `reason` a sentence), before its body
    /// was read; the server closes the connection after it.
    func respondToMalformedRequest(_ request: HTTPRequest, status: Int, reason: String) -> HTTPResponse
    /// The answer given instead of a large answer to a GET or HEAD while `held` bytes of answers wait for clients
    /// that have not read them, and that answer would take them past `limit` (`HTTPServerConfiguration
    /// .maxUnsentBytes`); it should ask the client to retry.
    func respondToUnsentLimit(limit: Int, held: Int) -> HTTPResponse
    /// The answer to a request whose body was dropped because the bodies being received at once would have passed
    /// `limit` (`HTTPServerConfiguration.maxReceivingBytes`); the body has been read. It should ask the client to
    /// retry.
    func respondToReceivingLimit(_ request: HTTPRequest, limit: Int) -> HTTPResponse
    /// The headers every response carries, whatever answered it (a handler, a resumed or shut-down suspension, the
    /// body limit): called on the server's thread for each response just before it is sent, after the response's
    /// own headers went in, with the request's header fields (`requestHeader`, any case) and a function that adds
    /// one more header.
    func addCommonHeaders(
        to response: HTTPResponse, requestHeader: (String) -> String?, _ add: (_ name: String, _ value: String) -> Void)
}

extension HTTPResponder {
    public func addCommonHeaders(
        to response: HTTPResponse, requestHeader: (String) -> String?, _ add: (_ name: String, _ value: String) -> Void
    ) {}

    public func respondToOversizedBody(_ request: HTTPRequest, limit: Int) -> HTTPResponse {
        HTTPResponse(status: 413, contentType: "text/plain", text: "request body over \(limit) bytes\n")
    }

    public func respondToMalformedRequest(_ request: HTTPRequest, status: Int, reason: String) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/plain", text: reason + "\n")
    }

    public func respondToUnsentLimit(limit: Int, held: Int) -> HTTPResponse {
        var response = HTTPResponse(status: 503, contentType: "text/plain", text: "too many unread answers\n")
        response.headers.append(("Retry-After", "1"))
        return response
    }

    public func respondToReceivingLimit(_ request: HTTPRequest, limit: Int) -> HTTPResponse {
        var response = HTTPResponse(status: 503, contentType: "text/plain", text: "too many bodies being received\n")
        response.headers.append(("Retry-After", "1"))
        return response
    }
}
