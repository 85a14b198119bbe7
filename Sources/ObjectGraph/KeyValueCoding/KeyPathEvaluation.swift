/// The state of one key-path evaluation: what it may still produce, and (when asked) the objects it read.
struct KeyPathEvaluation {
    /// The allowance of the run it is part of (`KeyPathAllowance.withLimit`), if any.
    let allowance: KeyPathAllowance?
    /// The to-many elements it may produce: `GraphState.maximumValues`, or its allowance's `perEvaluation`.
    let limit: Int
    /// To-many elements it may still produce (`limit` at the start).
    var budget: Int
    /// The objects whose properties were read (`ObjectHandle.key`, in reading order, repeats included), when asked
    /// for (`ObjectReads`).
    var reads: [UInt64]?

    init() {
        let allowance = KeyPathAllowance.current
        self.allowance = allowance
        limit = min(GraphState.maximumValues, allowance?.perEvaluation ?? GraphState.maximumValues)
        budget = limit
    }

    /// Takes `count` values produced at `key` from the budget and from the allowance (if any); 400 `bad-key-path`
    /// naming `key` beyond either, saying `why` so many came.
    mutating func take(_ count: Int, at key: String, why: String) throws(ObjectGraphError) {
        budget -= count
        guard budget >= 0 else {
            throw .badKeyPath(key, "the key path reaches more than \(limit) values (\(why)).")
        }
        if let allowance, !allowance.take(count) {
            throw .badKeyPath(
                key, "the key paths of this request reach more than \(allowance.total ?? 0) values together (\(why)).")
        }
    }
}
