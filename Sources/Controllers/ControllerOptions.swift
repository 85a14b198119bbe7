import ObjectGraph
import PropertyList

/// The behaviour switches of a controller, with Cocoa's defaults.
public struct ControllerOptions: Sendable, Hashable {
    /// After a removal or a content change leaves nothing selected, select a neighbour (or the first object).
    public var avoidsEmptySelection = true
    /// Keep the selected objects selected across re-arranging (else the indexes are kept).
    public var preservesSelection = true
    /// Select what `add` and `insert` create.
    public var selectsInsertedObjects = true
    /// `add` and `insert` clear the filter predicate, so the new object is visible (array controllers only: a
    /// tree's filter chooses its roots).
    public var clearsFilterPredicateOnInsertion = true
    /// The selection proxy answers `MultipleValues` for any multiple selection, even with equal values.
    public var alwaysUsesMultipleValuesMarker = false
    /// A change to a sort or filter key of a content object re-arranges (else only content changes do).
    public var automaticallyRearrangesObjects = false
    /// Whether the controller changes the model (add, insert, remove, set through the selection, commit).
    public var editable = true

    public init() {}

    /// The option names, in the order the JSON form lists them.
    public static let names = [
        "avoidsEmptySelection", "preservesSelection", "selectsInsertedObjects", "clearsFilterPredicateOnInsertion",
        "alwaysUsesMultipleValuesMarker", "automaticallyRearrangesObjects", "editable",
    ]

    /// The option called `name`; nil for another name.
    public subscript(name: String) -> Bool? {
        get {
            switch name {
            case "avoidsEmptySelection": avoidsEmptySelection
            case "preservesSelection": preservesSelection
            case "selectsInsertedObjects": selectsInsertedObjects
            case "clearsFilterPredicateOnInsertion": clearsFilterPredicateOnInsertion
            case "alwaysUsesMultipleValuesMarker": alwaysUsesMultipleValuesMarker
            case "automaticallyRearrangesObjects": automaticallyRearrangesObjects
            case "editable": editable
            default: nil
            }
        }
        set {
            guard let newValue else { return }
            switch name {
            case "avoidsEmptySelection": avoidsEmptySelection = newValue
            case "preservesSelection": preservesSelection = newValue
            case "selectsInsertedObjects": selectsInsertedObjects = newValue
            case "clearsFilterPredicateOnInsertion": clearsFilterPredicateOnInsertion = newValue
            case "alwaysUsesMultipleValuesMarker": alwaysUsesMultipleValuesMarker = newValue
            case "automaticallyRearrangesObjects": automaticallyRearrangesObjects = newValue
            case "editable": editable = newValue
            default: break
            }
        }
    }
}
