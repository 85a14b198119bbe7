/// The identity of a stored object: its entity and its id, written `Entity/id` (API.md §4).
///
/// Ids are `[A-Za-z0-9_.-]{1,64}`, chosen by the client or assigned by the store. Ordering is by entity, then id.
public struct ObjectID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let entity: String
    public let id: String

    public init(entity: String, id: String) {
        self.entity = entity
        self.id = id
    }

    /// Whether `text` is a reference `Entity/id` (`init(reference:)` takes it).
    public static func isReference(_ text: String) -> Bool {
        ObjectID(reference: text) != nil
    }

    /// Parses `Entity/id`; nil unless both parts are present and the id is well formed.
    public init?(reference: String) {
        guard let slash = reference.firstIndex(of: "/") else { return nil }
        let entity = String(reference[..<slash])
        let id = String(reference[reference.index(after: slash)...])
        guard !entity.isEmpty, ObjectID.isValidID(id) else { return nil }
        self.init(entity: entity, id: id)
    }

    /// Whether `id` is `[A-Za-z0-9_.-]{1,64}` and not `.` or `..`.
    public static func isValidID(_ id: String) -> Bool {
        let utf8 = id.utf8
        // `.` and `..` are dot-segments: URL clients (curl, browsers) remove them, so such objects could not be
        // addressed.
        guard (1...64).contains(utf8.count), id != ".", id != ".." else { return false }
        return utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"):
                true
            default: false
            }
        }
    }

    /// `Entity/id`.
    public var description: String { "\(entity)/\(id)" }

    public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool {
        (lhs.entity, lhs.id) < (rhs.entity, rhs.id)
    }
}
