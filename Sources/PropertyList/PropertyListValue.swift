import Foundation

/// A property-list value: the one value type that crosses every layer of Bindery.
///
/// Dates carry millisecond precision (they are rounded to whole milliseconds when decoded), reals are always finite.
/// Dictionaries are unordered; the JSON and XML writers emit their keys sorted, so output is deterministic.
public enum PropertyListValue: Sendable, Hashable {
    case null
    case boolean(Bool)
    case integer(Int64)
    case real(Double)
    case string(String)
    case date(Date)
    case data(Data)
    case array([PropertyListValue])
    case dictionary([String: PropertyListValue])

    /// The name of the value's type as the model and error messages spell it.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .boolean: "boolean"
        case .integer: "integer"
        case .real: "real"
        case .string: "string"
        case .date: "date"
        case .data: "data"
        case .array: "array"
        case .dictionary: "dictionary"
        }
    }

    /// Whether the two are the same value as JSON carries it: `==`, but reals compare by their bits, so that `-0.0`
    /// and `0.0` differ, and text by its code points, as `isEqual:` does, so that é written as one character or as e
    /// and an accent differ (a store that took one for the other would answer a value it was not sent).
    public func isIdentical(to other: PropertyListValue) -> Bool {
        switch (self, other) {
        case (.real(let a), .real(let b)): a.bitPattern == b.bitPattern
        case (.string(let a), .string(let b)): a.isIdentical(to: b)
        case (.array(let a), .array(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.isIdentical(to: $1) }
        case (.dictionary(let a), .dictionary(let b)):
            a.count == b.count
                && a.allSatisfy { key, value in
                    guard let index = b.index(forKey: key) else { return false }
                    return b[index].key.isIdentical(to: key) && value.isIdentical(to: b[index].value)
                }
        default: self == other
        }
    }

    /// Why two keys of a document that look different are one: dictionaries key by `String`, which compares text by
    /// Unicode's canonical equivalence.
    public static let equivalentKeysNote =
        "keys that are the same text to Unicode, such as é written as one character or as e and an accent, are one key"

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// About how many bytes of memory the value takes, for memory budgets: its 24-byte slot in the array or
    /// dictionary that holds it, and what it allocates (text longer than 15 UTF-8 bytes, data, the storage of a
    /// non-empty array or dictionary, whose hash table keeps a quarter of its buckets free), with the allocator's
    /// overhead. Within about 20% of what glibc's heap grows by for 100,000 tree nodes, objects, numbers or strings
    /// (it counted 16 bytes a value plus text before, a third of the memory of nested dictionaries).
    public var approximateByteCount: Int {
        switch self {
        case .null, .boolean, .integer, .real, .date: 24
        case .string(let s): 24 + Self.heapBytes(ofText: s)
        case .data(let d): 24 + (d.count <= 14 ? 0 : 48 + d.count)
        case .array(let elements): elements.isEmpty ? 24 : elements.reduce(24 + 48) { $0 + $1.approximateByteCount }
        case .dictionary(let dictionary):
            dictionary.isEmpty
                ? 24
                : dictionary.reduce(24 + 64 + Self.buckets(holding: dictionary.count) * 40) {
                    // The entry's key and value slots are the buckets' 40 bytes.
                    $0 + Self.heapBytes(ofText: $1.key) + $1.value.approximateByteCount - 24
                }
        }
    }

    /// What a string allocates besides its 16 bytes: nothing up to 15 UTF-8 bytes (held in place), else its text
    /// with a header and the allocator's overhead.
    private static func heapBytes(ofText text: String) -> Int {
        text.utf8.count <= 15 ? 0 : 48 + text.utf8.count
    }

    /// The buckets of a Swift dictionary of `count` entries: a power of two at most three quarters full.
    private static func buckets(holding count: Int) -> Int {
        var buckets = 1
        while buckets * 3 < count * 4 { buckets *= 2 }
        return buckets
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var arrayValue: [PropertyListValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var dictionaryValue: [String: PropertyListValue]? {
        if case .dictionary(let d) = self { return d }
        return nil
    }

    public var boolValue: Bool? {
        if case .boolean(let b) = self { return b }
        return nil
    }

    /// The value as an integer when it is one, or a real with no fraction below 2^53 either way.
    public var integerValue: Int64? {
        switch self {
        case .integer(let i): return i
        case .real(let r):
            // Only below 2^53, where every integer is a double of its own and no other number rounds to it: from it on
            // a real may stand for several integers (9007199254740993.0 is read as 2^53), and which the client wrote
            // cannot be told.
            guard r.rounded() == r, abs(r) < Self.exactIntegerBound else { return nil }
            return Int64(r)
        default: return nil
        }
    }

    /// 2^53: below it every integer is a double, and only the one integer reads as it.
    public static let exactIntegerBound = 9_007_199_254_740_992.0

    /// The value as a double when it is a number.
    public var doubleValue: Double? {
        switch self {
        case .integer(let i): Double(i)
        case .real(let r): r
        default: nil
        }
    }

    public subscript(key: String) -> PropertyListValue? {
        if case .dictionary(let d) = self { return d[key] }
        return nil
    }

    /// The value as `isEqual:` and `hash` see it (see `EqualityKey`).
    public var equalityKey: EqualityKey { EqualityKey(self) }

    /// The first dictionary key anywhere inside the value that starts with `$` (API.md §1: such keys are reserved
    /// for the tags); with `allowingReferences`, an object reference `{"$ref": "Entity/id"}` whose text it takes is
    /// not one (a malformed one's `$ref` is).
    public func reservedKey(allowingReferences isReference: ((String) -> Bool)? = nil) -> String? {
        switch self {
        case .array(let elements):
            for element in elements {
                if let key = element.reservedKey(allowingReferences: isReference) { return key }
            }
        case .dictionary(let dictionary):
            if let isReference, dictionary.count == 1, case .string(let text) = dictionary["$ref"], isReference(text) {
                return nil
            }
            for (key, element) in dictionary {
                if key.hasPrefix("$") { return key }
                if let found = element.reservedKey(allowingReferences: isReference) { return found }
            }
        default: break
        }
        return nil
    }
}

extension PropertyListValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
    public init(arrayLiteral elements: PropertyListValue...) { self = .array(elements) }
    public init(nilLiteral: ()) { self = .null }
    public init(dictionaryLiteral elements: (String, PropertyListValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension String {
    /// Whether the two are the same text code point for code point, as `isEqual:` compares (Swift's `==` takes é
    /// written as one character and as e and an accent for one).
    public func isIdentical(to other: String) -> Bool {
        utf8.elementsEqual(other.utf8)
    }

    /// Code-point order: a total order (Swift's `<` leaves canonically equivalent texts unordered, so a sort by it
    /// may put them either way).
    public func precedesByCodePoints(_ other: String) -> Bool {
        // UTF-8 orders as its code points do, and its bytes are quicker to walk than decoded scalars.
        utf8.lexicographicallyPrecedes(other.utf8)
    }
}

/// A value as `isEqual:` and `hash` see it, for sets and equality tests (`@distinctUnionOf...`, the selection's common
/// value, `enum` constraints): numbers by value, as `NSNumber`s compare (a real that holds an integer is that integer,
/// a boolean 0 or 1: `3` equals `3.0` and `@YES` equals `@1`; `-0.0` equals `0.0`), and text code point for code
/// point, as `NSString`'s `isEqual:` compares (é as one character and as e and an accent differ; Swift's `==` takes
/// them for one), inside arrays and dictionaries too.
public struct EqualityKey: Hashable, Sendable {
    private indirect enum Form: Hashable, Sendable {
        /// null, integer, real with a fraction, date, data.
        case scalar(PropertyListValue)
        case text([UInt8])
        case array([Form])
        case dictionary([[UInt8]: Form])
    }

    private let form: Form

    public init(_ value: PropertyListValue) {
        form = Self.form(of: value)
    }

    private static func form(of value: PropertyListValue) -> Form {
        switch value {
        case .boolean(let flag):
            return .scalar(.integer(flag ? 1 : 0))
        case .real(let real):
            guard real.rounded() == real, real >= -9.223_372_036_854_775_808e18, real < 9.223_372_036_854_775_808e18
            else { return .scalar(value) }
            return .scalar(.integer(Int64(real)))
        case .string(let text):
            return .text(Array(text.utf8))
        case .array(let elements):
            return .array(elements.map(form(of:)))
        case .dictionary(let dictionary):
            // A dictionary's keys are unique as Swift compares them, so also code point for code point.
            return .dictionary(
                Dictionary(uniqueKeysWithValues: dictionary.map { (Array($0.key.utf8), form(of: $0.value)) }))
        case .null, .integer, .date, .data:
            return .scalar(value)
        }
    }
}
