/// The state of one key-path evaluation: what it may still produce, and (when asked) the newest version of the objects
/// it read.
struct KeyPathEvaluation {
    /// The allowance of the run it is part of (`KeyPathAllowance.withLimit`), if any.
    let allowance: KeyPathAllowance?
    /// The to-many elements it may produce: `GraphState.maximumValues`, or its allowance's `perEvaluation`.
    let limit: Int
    /// To-many elements it may still produce (`limit` at the start).
    var budget: Int
    /// Whether `newestVersion` is kept (for an object's version through its derived keys).
    var tracksVersions = false
    /// The largest version (seq of last change) of the objects whose properties were read.
    var newestVersion: Int64 = 0
    /// Objects changed by a transaction not committed yet: reading one of them makes `newestVersion` `.max`.
    var uncommitted: Set<ObjectHandle> = []
    /// The objects whose properties were read (`ObjectHandle.key`, in reading order, repeats included), when asked
    /// for (`ObjectReads`).
    var reads: [UInt64]?

    init(tracksVersions: Bool = false, newestVersion: Int64 = 0) {
        let allowance = KeyPathAllowance.current
        self.allowance = allowance
        limit = min(GraphState.maximumValues, allowance?.perEvaluation ?? GraphState.maximumValues)
        budget = limit
        self.tracksVersions = tracksVersions
        self.newestVersion = newestVersion
    }
}
