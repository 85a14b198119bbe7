/// A tighter limit on the to-many elements the key-path evaluations of one run may produce, each and together.
///
/// One evaluation may produce `GraphState.maximumValues` anywhere. A client's key path that fans out through to-many
/// relationships (`department.employees.department.employees...`) evaluated on every object of a listing, or by an
/// observer at every commit, multiplies that. Inside `withLimit`, each evaluation may produce `perEvaluation` (in
/// proportion to the store, so that a large relationship of a large store is still read whole), and all of them
/// together `total` when one is given; beyond either they throw 400 `bad-key-path`.
///
/// `@unchecked Sendable`: a run's evaluations happen on the thread that started it (the task-local is not shared).
public final class KeyPathAllowance: @unchecked Sendable {
    let total: Int?
    let perEvaluation: Int
    /// The to-many elements the run's evaluations produced so far.
    private(set) var used = 0
    /// Derived keys' values by object, kept for the run when it asked for it (a listing, under one read of the
    /// store): a sort or filter through `department.payroll` evaluates each department's payroll once, not once
    /// for each of its employees.
    var derivedValues: [DerivedValueKey: KeyPathNode]?

    struct DerivedValueKey: Hashable {
        var object: ObjectHandle
        var derivedKey: Int
    }

    init(total: Int?, perEvaluation: Int, cachingDerivedValues: Bool = false) {
        self.total = total
        self.perEvaluation = perEvaluation
        derivedValues = cachingDerivedValues ? [:] : nil
    }

    @TaskLocal static var current: KeyPathAllowance?

    /// What one evaluation of a client's key path may produce in a store of `objectCount` objects: twice the store
    /// (any relationship read whole), at least 100,000, at most `GraphState.maximumValues`. A key path that fans out
    /// visits the same objects many times over and meets it.
    public static func perEvaluation(objectCount: Int) -> Int {
        min(GraphState.maximumValues, max(100_000, 2 * objectCount))
    }

    /// What all the evaluations of one listing (its filter, sort keys and projected keys over every object) may
    /// produce together in a store of `objectCount` objects: fifty per stored object, at least 10,000,000. Each
    /// evaluation is bounded by `perEvaluation`, but a key path that goes up a to-one and down a large to-many from
    /// every object (`ANY department.employees.lastName` with 16,000 employees in one department: 256,000,000
    /// values, 19 s under the store's lock) multiplies it by the objects; this stops such a listing within about a
    /// second at its first 10,000,000 (a few seconds in a store of millions).
    public static func listingTotal(objectCount: Int) -> Int {
        max(10_000_000, 50 * objectCount)
    }

    /// Runs `body` with this allowance for all its evaluations (nested runs draw on the innermost one only); answers
    /// its result and the to-many elements its evaluations produced. `cachingDerivedValues` only where the store
    /// does not change during `body` (one read).
    public static func withLimit<T>(
        total: Int? = nil, perEvaluation: Int, cachingDerivedValues: Bool = false, _ body: () throws -> T
    ) rethrows -> (value: T, used: Int) {
        let allowance = KeyPathAllowance(
            total: total, perEvaluation: perEvaluation, cachingDerivedValues: cachingDerivedValues)
        let value = try $current.withValue(allowance, operation: body)
        return (value, allowance.used)
    }

    /// `withLimit`, answering nil rather than throwing when `body` is stopped by `total`: a run tried where it must
    /// stay short (a request thread) is then made elsewhere with a larger total.
    public static func withinTotal<T>(
        _ total: Int, perEvaluation: Int, cachingDerivedValues: Bool = false, _ body: () throws -> T
    ) throws -> T? {
        let allowance = KeyPathAllowance(
            total: total, perEvaluation: perEvaluation, cachingDerivedValues: cachingDerivedValues)
        do {
            return try $current.withValue(allowance, operation: body)
        } catch  where allowance.used > total {
            return nil
        }
    }

    /// Runs `body` with no limit beyond each evaluation's (as outside any allowance, whatever allowance the caller
    /// runs within) and a cache of derived keys' values; answers its result and the to-many elements its evaluations
    /// produced. For the service's own evaluations over many objects under one read of the store (controllers
    /// arranging their content, an export): `department.payroll` is then evaluated once per department, not once per
    /// employee. The service's own work that a client's read happens to set off (controllers applying the commits
    /// they have not seen yet) is not the client's to pay for, and an allowance that stopped it would leave it half
    /// done (a filter that could not be evaluated drops its object). Only where the store does not change during
    /// `body`.
    public static func caching<T>(_ body: () throws -> T) rethrows -> (value: T, used: Int) {
        try withLimit(perEvaluation: GraphState.maximumValues, cachingDerivedValues: true, body)
    }

    /// `caching`, unless `body` runs within an allowance already (a client's, whose limits hold).
    public static func cachingOutsideAnyAllowance<T>(_ body: () throws -> T) rethrows -> T {
        guard current == nil else { return try body() }
        return try caching(body).value
    }

    /// The allowance for the model's own derived keys written into objects' JSON during this run: no limit beyond
    /// each evaluation's, and its own cache when the run keeps one, made once so that it serves every object.
    lazy var forModelKeys = KeyPathAllowance(
        total: nil, perEvaluation: GraphState.maximumValues, cachingDerivedValues: derivedValues != nil)

    /// Takes `count` elements; false when the total cannot give them.
    func take(_ count: Int) -> Bool {
        used += count
        return total.map { used <= $0 } ?? true
    }
}
