import HTTPServer

/// Maps a method and decoded path segments to a handler.
///
/// Patterns are written `/objects/:entity/:id/*keyPath`: literal segments, `:name` for one segment (`:name(a|b)`: one
/// of these words), `#name` for one segment of decimal digits (an index), and `*name` for one or more segments: all
/// but those the segments after it need (`/*keyPath/#index`; `*name(!a|b)`: whose first is none of these words).
/// Literal routes win over parameters because routes are tried in the order they were added. `HEAD` is served by the
/// `GET` route. `Allow` lists only the routes that match the whole path, words and digits included.
public struct Router: Sendable {
    public typealias Handler = @Sendable (RouteRequest) throws -> HTTPHandlerResult

    private enum Segment: Sendable, Equatable {
        case literal(String)
        /// With the words it may be, or nil for any segment.
        case parameter(String, Set<String>?)
        case index(String)
        /// With the words its first segment may not be.
        case rest(String, excluding: Set<String>)
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

    /// The outcome of `route`: like `Match`, with the parameters instead of the routed request.
    enum Outcome {
        case found(Handler, [RouteRequest.Binding])
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
            if part.hasPrefix(":") {
                guard let open = part.firstIndex(of: "("), part.hasSuffix(")") else {
                    return .parameter(String(part.dropFirst()), nil)
                }
                let words = part[part.index(after: open)..<part.index(before: part.endIndex)].split(separator: "|")
                return .parameter(String(part[part.index(after: part.startIndex)..<open]), Set(words.map(String.init)))
            }
            if part.hasPrefix("#") { return .index(String(part.dropFirst())) }
            if part.hasPrefix("*") {
                guard let open = part.firstRange(of: "(!"), part.hasSuffix(")") else {
                    return .rest(String(part.dropFirst()), excluding: [])
                }
                let words = part[open.upperBound..<part.index(before: part.endIndex)].split(separator: "|")
                return .rest(
                    String(part[part.index(after: part.startIndex)..<open.lowerBound]),
                    excluding: Set(words.map(String.init)))
            }
            return .literal(String(part))
        }
        routes.append(Route(method: method, text: pattern, pattern: segments, handler: handler))
    }

    /// Tries the routes in order; only the route that matches binds its parameters, so a request costs one
    /// comparison per literal segment of the routes before it and no allocation for them.
    public func match(_ request: HTTPRequest, segments: [String]) -> Match {
        switch route(request.method, segments: segments) {
        case .found(let handler, let bindings):
            .found(handler, RouteRequest(request: request, segments: segments, bindings: bindings))
        case .methodNotAllowed(let allowed): .methodNotAllowed(allowed)
        case .notFound: .notFound
        }
    }

    /// `match` without building the `RouteRequest`, so that the caller can move its request into it.
    func route(_ method: String, segments: [String]) -> Outcome {
        let method = method == "HEAD" ? "GET" : method
        for route in routes where route.method == method && Self.matches(route.pattern, segments) {
            return .found(route.handler, Self.bind(route.pattern, segments))
        }
        let allowed = methods(for: segments)
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed)
    }

    /// Every method some route answers for this path (`HEAD` with `GET`), in the order the routes were added.
    func methods(for segments: [String]) -> [String] {
        var allowed: [String] = []
        for route in routes where Self.matches(route.pattern, segments) && !allowed.contains(route.method) {
            allowed.append(route.method)
        }
        if allowed.contains("GET") { allowed.append("HEAD") }
        return allowed
    }

    private static func matches(_ pattern: [Segment], _ segments: [String]) -> Bool {
        var index = 0
        for (position, segment) in pattern.enumerated() {
            guard index < segments.count else { return false }
            switch segment {
            case .literal(let text):
                guard segments[index] == text else { return false }
                index += 1
            case .parameter(_, let words):
                guard words?.contains(segments[index]) ?? true else { return false }
                index += 1
            case .index:
                guard segments[index].utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                    return false
                }
                index += 1
            case .rest(_, let excluded):
                let start = index
                index = segments.count - (pattern.count - position - 1)
                guard index > start, !excluded.contains(segments[start]) else { return false }  // at least one
            }
        }
        return index == segments.count
    }

    /// The parameters of a pattern that `matches` the segments: each name with the segments it takes.
    private static func bind(_ pattern: [Segment], _ segments: [String]) -> [RouteRequest.Binding] {
        var bindings: [RouteRequest.Binding] = []
        let parameters = pattern.count(where: { if case .literal = $0 { false } else { true } })
        guard parameters > 0 else { return bindings }  // no allocation for a route of literals only
        bindings.reserveCapacity(parameters)
        var index = 0
        for (position, segment) in pattern.enumerated() {
            switch segment {
            case .literal:
                index += 1
            case .parameter(let name, _), .index(let name):
                bindings.append(RouteRequest.Binding(name: name, segments: index..<index + 1))
                index += 1
            case .rest(let name, _):
                let end = segments.count - (pattern.count - position - 1)
                bindings.append(RouteRequest.Binding(name: name, segments: index..<end))
                index = end
            }
        }
        return bindings
    }
}

/// A routed request: the request and the values of the pattern's parameters.
public struct RouteRequest: Sendable {
    /// A parameter of the pattern and the indexes of the segments it took (to the end for `*name`).
    struct Binding: Sendable {
        var name: String
        var segments: Range<Int>
    }

    public var request: HTTPRequest
    public var segments: [String]
    /// In pattern order; a name bound twice takes its last binding.
    private var bindings: [Binding]

    init(request: HTTPRequest, segments: [String], bindings: [Binding]) {
        self.request = request
        self.segments = segments
        self.bindings = bindings
    }

    /// The segment bound to `:name` or `#name` (the first of `*name`), or "" when the pattern has none of that name.
    public func parameter(_ name: String) -> String {
        guard let range = range(of: name), range.lowerBound < segments.count else { return "" }
        return segments[range.lowerBound]
    }

    /// The segments bound to `*name` (or `:name`).
    public func rest(_ name: String) -> [String] {
        guard let range = range(of: name) else { return [] }
        return Array(segments[range.clamped(to: segments.indices)])
    }

    /// The segments bound to `*name` joined with dots: a key path (one segment is returned as it is, uncopied).
    public func keyPath(_ name: String) -> String {
        guard let range = range(of: name)?.clamped(to: segments.indices) else { return "" }
        return range.count == 1 ? segments[range.lowerBound] : segments[range].joined(separator: ".")
    }

    private func range(of name: String) -> Range<Int>? {
        bindings.last(where: { $0.name == name })?.segments
    }
}
