/// The state of one key-path evaluation: what it may still produce, and (when asked) the newest version of the objects
/// it read.
struct KeyPathEvaluation {
    /// To-many elements it may still produce (`GraphState.maximumValues` at the start).
    var budget = GraphState.maximumValues
    /// Whether `newestVersion` is kept (for an object's version through its derived keys).
    var tracksVersions = false
    /// The largest version (seq of last change) of the objects whose properties were read.
    var newestVersion: Int64 = 0
    /// Objects changed by a transaction not committed yet: reading one of them makes `newestVersion` `.max`.
    var uncommitted: Set<ObjectHandle> = []
    /// The allowance of the run it is part of (`KeyPathAllowance.withLimit`), if any.
    let allowance = KeyPathAllowance.current
}
