/// What deleting the source object does to the destination of a relationship (Core Data's delete rules).
///
/// `nullify` removes the deleted object from the destination's inverse; `cascade` deletes the destinations too;
/// `deny` refuses (409 `delete-denied`) while the relationship has a destination that is not itself being deleted.
public enum DeleteRule: String, Sendable, Hashable, CaseIterable {
    case nullify
    case cascade
    case deny
}
