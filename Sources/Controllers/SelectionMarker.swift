import ObjectGraph
import PropertyList

/// The placeholders a selection proxy answers instead of a value (NSNoSelectionMarker and friends).
public enum SelectionMarker: String, Sendable, Hashable, CaseIterable {
    /// Nothing is selected.
    case noSelection = "NoSelection"
    /// Several objects are selected and their values differ (or `alwaysUsesMultipleValuesMarker` is on).
    case multipleValues = "MultipleValues"
    /// The selected objects have no such key.
    case notApplicable = "NotApplicable"

    /// The JSON form: `{"$marker": "NoSelection"}`.
    public var json: PropertyListValue { ["$marker": .string(rawValue)] }
}

/// What the selection proxy answers for one key path: a value, or a marker.
public enum SelectionValue: Sendable, Hashable {
    case value(KeyValue)
    case marker(SelectionMarker)

    /// The JSON form: the value (objects as `{"$ref"}`), or the marker's `{"$marker"}`.
    public var json: PropertyListValue {
        switch self {
        case .value(let value): value.json
        case .marker(let marker): marker.json
        }
    }
}
