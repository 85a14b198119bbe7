import HTTPServer

/// Maps a method and decoded path segments to a handler.
///
/// Patterns are written `/objects/:entity/:id/*keyPath`: literal segments, `:name` for one segment, and a final
/// `*name` for one or more remaining segments. Literal routes win over parameters because routes are tried in the
/// order they were added. `HEAD` is served by the `GET` route.
public struct Router: Sendable {
    public typealias Handler = @Sendable (RouteRequest) throws -> HTTPHandlerResult

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
        case rest(String)
    }

    private struct Route: Sendable {
        var method: String
        var text: String
        var pattern: [Segment]
        var handler: Handler
    }

    /// The outcome of routing one request.
    public enum Match {
        case found(Handler, RouteRequest)
        /// The path exists, but not for this method; the allowed methods.
        case methodNotAllowed([String])
        case notFound
    }

    private var routes: [Route] = []

    public init() {}

    /// Every route's method and pattern, in the order they were added (for documentation checks).
    public var patterns: [(method: String, pattern: String)] {
        routes.map { ($0.method, $0.text) }
    }

    public mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        let segments: [Segment] = pattern.split(separator: "/").map { part in
            if part.hasPrefix(":") { return .parameter(String(part.dropFirst())) }
            if part.hasPrefix("*") { return .rest(String(part.dropFirst())) }
            return .literal(String(part))
        }
        routes.append(Route(method: method, text: pattern, pattern: segments, handler: handler))
    }

    public func match(_ request: HTTPRequest, segments: [String]) -> Match {
        let method = request.method == "HEAD" ? "GET" : request.method
        var allowed: [String] = []
        for route in routes {
            guard let parameters = Self.bind(route.pattern, to: segments) else { continue }
            if route.method == method {
                return .found(route.handler, RouteRequest(request: request, segments: segments, parameters: parameters))
            }
            if !allowed.contains(route.method) { allowed.append(route.method) }
        }
        if allowed.isEmpty { return .notFound }
        if allowed.contains("GET") { allowed.append("HEAD") }
        return .methodNotAllowed(allowed)
    }

    private static func bind(_ pattern: [Segment], to segments: [String]) -> [String: [String]]? {
        var parameters: [String: [String]] = [:]
        var index = 0
        for segment in pattern {
            switch segment {
            case .literal(let text):
                guard index < segments.count, segments[index] == text else { return nil }
                index += 1
            case .parameter(let name):
                guard index < segments.count else { return nil }
                parameters[name] = [segments[index]]
                index += 1
            case .rest(let name):
                guard index < segments.count else { return nil }
                parameters[name] = Array(segments[index...])
                index = segments.count
            }
        }
        return index == segments.count ? parameters : nil
    }
}

/// A routed request: the request and the values of the pattern's parameters.
public struct RouteRequest: Sendable {
    public var request: HTTPRequest
    public var segments: [String]
    private var parameters: [String: [String]]

    init(request: HTTPRequest, segments: [String], parameters: [String: [String]]) {
        self.request = request
        self.segments = segments
        self.parameters = parameters
    }

    /// The segment bound to `:name`, or "" when the pattern has none of that name.
    public func parameter(_ name: String) -> String {
        parameters[name]?.first ?? ""
    }

    /// The segments bound to `*name`.
    public func rest(_ name: String) -> [String] {
        parameters[name] ?? []
    }
}
