import PropertyList

/// A sort descriptor (NSSortDescriptor): a key path, a direction and a comparison selector.
///
/// Ordering follows Cocoa: nil sorts first when ascending (last when descending); numbers compare by value across
/// integer, real and boolean; strings by the selector; dates chronologically; data byte by byte; objects by id.
/// Values of different kinds order as null < number/boolean < string < date < data < array < dictionary < object
/// (Cocoa raises an exception there; a service must not). To sort, use `SortDescriptor.sort(_:by:resolver:)` or a
/// `SortOrdering`, which fetches each subject's keys once.
public struct SortDescriptor: Sendable, Hashable, CustomStringConvertible {
    /// The comparison selector.
    public enum Selector: String, Sendable, Hashable, CaseIterable {
        /// `compare:`: strings by Unicode scalar value (as NSString's literal compare), so "B" < "a".
        case compare = "compare:"
        /// `caseInsensitiveCompare:`: strings after case folding.
        case caseInsensitiveCompare = "caseInsensitiveCompare:"
        /// `localizedStandardCompare:`: as the Finder sorts names: case- and diacritic-insensitive, and runs of
        /// digits by numeric value ("Foo 5" < "Foo 10").
        case localizedStandardCompare = "localizedStandardCompare:"
    }

    public var key: String
    public var ascending: Bool
    public var selector: Selector

    public init(key: String, ascending: Bool = true, selector: Selector = .compare) {
        self.key = key
        self.ascending = ascending
        self.selector = selector
    }

    /// The same descriptor in the other direction.
    public var reversed: SortDescriptor {
        SortDescriptor(key: key, ascending: !ascending, selector: selector)
    }

    /// The JSON form: `{"key": ..., "ascending": ..., "selector": ...}`.
    public var json: PropertyListValue {
        ["key": .string(key), "ascending": .boolean(ascending), "selector": .string(selector.rawValue)]
    }

    /// The query-string form (`-salary`), with the selector after a colon when it is not `compare:`.
    public var description: String {
        (ascending ? "" : "-") + key + (selector == .compare ? "" : ":" + selector.rawValue)
    }

    /// Reads `{"key": "lastName", "ascending": true, "selector": "caseInsensitiveCompare:"}`.
    ///
    /// `ascending` defaults to true and `selector` to `compare:` (the trailing colon may be left out). Throws
    /// 400 `bad-query` for anything else, naming the allowed selectors for an unknown one.
    public init(json: PropertyListValue) throws {
        guard case .dictionary(let entries) = json else {
            throw ObjectGraphError.badQuery("A sort descriptor is an object {\"key\", \"ascending\", \"selector\"}.")
        }
        for name in entries.keys where !["key", "ascending", "selector"].contains(name) {
            throw ObjectGraphError.badQuery(
                "Unknown sort descriptor field \"\(name)\".", fields: ["field": .string(name)])
        }
        guard case .string(let key) = entries["key"] ?? .null else {
            throw ObjectGraphError.badQuery("A sort descriptor needs a \"key\" string.")
        }
        try SortDescriptor.validate(key: key)
        var ascending = true
        switch entries["ascending"] ?? .null {
        case .null: break
        case .boolean(let value): ascending = value
        default: throw ObjectGraphError.badQuery("A sort descriptor's \"ascending\" is true or false.")
        }
        var selector = Selector.compare
        switch entries["selector"] ?? .null {
        case .null: break
        case .string(let name): selector = try SortDescriptor.selector(named: name)
        default: throw ObjectGraphError.badQuery("A sort descriptor's \"selector\" is a string.")
        }
        self.init(key: key, ascending: ascending, selector: selector)
    }

    /// Sort descriptors in one list: each key is read from every object arranged.
    public static let maximumCount = 64

    /// Reads a JSON array of sort descriptors (null is none); 400 `bad-query` for anything else, and for more than
    /// `maximumCount`.
    public static func descriptors(json: PropertyListValue) throws -> [SortDescriptor] {
        switch json {
        case .null: return []
        case .array(let elements):
            try checkCount(elements.count)
            return try elements.map(SortDescriptor.init(json:))
        default:
            throw ObjectGraphError.badQuery(
                "Sort descriptors are an array of objects [{\"key\", \"ascending\", \"selector\"}], not \(json.typeName)."
            )
        }
    }

    /// Reads the query-string form `lastName,-salary`: comma-separated key paths, `-` in front for descending
    /// (`+` allowed for ascending), optionally `:selector` after the key (`lastName:caseInsensitiveCompare:`).
    ///
    /// An empty string gives no descriptors. Throws 400 `bad-query` for an empty item or a bad key or selector.
    public static func descriptors(query: String) throws -> [SortDescriptor] {
        guard !query.allSatisfy(\.isWhitespace) else { return [] }
        let items = query.split(separator: ",", omittingEmptySubsequences: false)
        try checkCount(items.count)
        return try items.map { item in
            var text = item.trimmingWhitespace()
            var ascending = true
            if text.first == "-" || text.first == "+" {
                ascending = text.first == "+"
                text = text.dropFirst()
            }
            var selector = Selector.compare
            if let colon = text.firstIndex(of: ":") {
                selector = try SortDescriptor.selector(named: String(text[text.index(after: colon)...]))
                text = text[..<colon]
            }
            let key = String(text)
            try validate(key: key)
            return SortDescriptor(key: key, ascending: ascending, selector: selector)
        }
    }

    private static func checkCount(_ count: Int) throws {
        guard count <= maximumCount else {
            throw ObjectGraphError.badQuery("At most \(maximumCount) sort descriptors, not \(count).")
        }
    }

    private static func selector(named name: String) throws -> Selector {
        if let selector = Selector(rawValue: name) ?? Selector(rawValue: name + ":") { return selector }
        throw ObjectGraphError.badQuery(
            "Unknown sort selector \"\(name)\".",
            fields: ["allowed": .array(Selector.allCases.map { .string($0.rawValue) })])
    }

    private static func validate(key: String) throws {
        let valid =
            !key.isEmpty
            && key.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { segment in
                !segment.isEmpty && !segment.contains { $0.isWhitespace || $0 == "," || $0 == ":" }
            }
        guard valid else {
            throw ObjectGraphError.badQuery(
                "\"\(key)\" is not a key path to sort by.", fields: ["keyPath": .string(key)])
        }
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> Substring {
        var text = self
        while text.first?.isWhitespace == true { text = text.dropFirst() }
        while text.last?.isWhitespace == true { text = text.dropLast() }
        return text
    }
}
