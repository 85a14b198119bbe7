import Synchronization

/// Responses sent, by status class, for `/metrics`; lock-free so that counting costs the hot path almost nothing.
final class ResponseCounters: Sendable {
    private let informational = Atomic<Int>(0)
    private let success = Atomic<Int>(0)
    private let redirection = Atomic<Int>(0)
    private let clientError = Atomic<Int>(0)
    private let serverError = Atomic<Int>(0)

    func count(status: Int) {
        switch status {
        case ..<200: informational.wrappingAdd(1, ordering: .relaxed)
        case 200..<300: success.wrappingAdd(1, ordering: .relaxed)
        case 300..<400: redirection.wrappingAdd(1, ordering: .relaxed)
        case 400..<500: clientError.wrappingAdd(1, ordering: .relaxed)
        default: serverError.wrappingAdd(1, ordering: .relaxed)
        }
    }

    /// `(class label, count)` pairs: `1xx` … `5xx`.
    var counts: [(String, Int)] {
        [
            ("1xx", informational.load(ordering: .relaxed)), ("2xx", success.load(ordering: .relaxed)),
            ("3xx", redirection.load(ordering: .relaxed)), ("4xx", clientError.load(ordering: .relaxed)),
            ("5xx", serverError.load(ordering: .relaxed)),
        ]
    }
}
