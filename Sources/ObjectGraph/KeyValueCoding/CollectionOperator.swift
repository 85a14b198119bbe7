/// A key-value coding collection operator (API.md §4), written `@name` in a key path.
///
/// The key path to the right of the operator is applied to each element first; `@count` ignores it, as in Cocoa.
public enum CollectionOperator: String, Sendable, Hashable, CaseIterable {
    case count = "@count"
    case sum = "@sum"
    case avg = "@avg"
    case min = "@min"
    case max = "@max"
    case distinctUnionOfObjects = "@distinctUnionOfObjects"
    case unionOfObjects = "@unionOfObjects"
    case distinctUnionOfArrays = "@distinctUnionOfArrays"
    case unionOfArrays = "@unionOfArrays"
}
