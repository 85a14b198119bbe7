/// A subject of a predicate or a sort descriptor together with the key-value coding that reads it.
///
/// Evaluation is generic over it, so the general path (a `KeyValue` read through any `KeyPathResolving`) and the
/// store's fast path (an object addressed by its `ObjectHandle`, see `ReadView.handles(of:matching:sortedBy:)`)
/// share one evaluator, and so one semantics. Implementations are used while the store's lock is held: no calling out.
protocol PredicateSubject {
    /// `SELF`: the subject as a value.
    var evaluatedObject: KeyValue { get }

    /// `value(forKeyPath:)` of the subject; errors (such as `undefined-key`) propagate.
    func value(forKeyPath keyPath: String) throws -> KeyValue
}

/// A `KeyValue` read through a `KeyPathResolving`: the subject of the public `evaluate(with:resolver:)` family.
struct ResolvedSubject<Resolver: KeyPathResolving>: PredicateSubject {
    let evaluatedObject: KeyValue
    let resolver: Resolver

    func value(forKeyPath keyPath: String) throws -> KeyValue {
        try resolver.value(forKeyPath: keyPath, of: evaluatedObject)
    }
}
