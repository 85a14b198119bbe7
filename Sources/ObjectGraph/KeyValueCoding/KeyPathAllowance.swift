/// A limit on the to-many elements that all the key-path evaluations of one run may produce together.
///
/// One evaluation may produce `GraphState.maximumValues`; a request that evaluates a key path on every object of a
/// listing, or an observer evaluated at every commit, would otherwise multiply that by its number of objects (a short
/// key path that fans out through to-many relationships, evaluated on 30 objects, is 60 million values). Evaluations
/// run inside `withLimit(_:_:)` also draw on its allowance: beyond it they throw 400 `bad-key-path`.
///
/// `@unchecked Sendable`: a run's evaluations happen on the thread that started it (the task-local is not shared).
public final class KeyPathAllowance: @unchecked Sendable {
    /// The to-many elements the run may still produce.
    private(set) var remaining: Int
    let limit: Int

    init(_ limit: Int) {
        self.limit = limit
        remaining = limit
    }

    @TaskLocal static var current: KeyPathAllowance?

    /// What one request's evaluations may produce together in a store of `objectCount` objects: 4,000,000 to-many
    /// elements (twice what one evaluation may, well under a second of work), plus 8 per object, so that a query that
    /// reads each relationship a few times over a large store (`filter=employees.@count > 5` on every department) is
    /// not refused while one that multiplies them is.
    public static func perRequest(objectCount: Int) -> Int { 4_000_000 + 8 * objectCount }

    /// Runs `body` with an allowance of `limit` to-many elements for all its evaluations (nested runs draw on the
    /// innermost one only); answers its result and what it used.
    public static func withLimit<T>(_ limit: Int, _ body: () throws -> T) rethrows -> (value: T, used: Int) {
        let allowance = KeyPathAllowance(limit)
        let value = try $current.withValue(allowance, operation: body)
        return (value, limit - allowance.remaining)
    }

    /// Takes `count` elements; false when the allowance cannot give them.
    func take(_ count: Int) -> Bool {
        remaining -= count
        return remaining >= 0
    }
}
