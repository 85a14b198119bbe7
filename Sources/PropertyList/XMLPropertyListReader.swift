import Foundation

/// A strict reader of XML property lists (Apple's `PropertyList-1.0` DTD) over UTF-8 bytes.
///
/// Only well-formed XML is read: every element closed in order, one root (`<plist>` holding one value, or the value
/// itself), nothing after it but white space, comments and processing instructions. The prolog may hold an XML
/// declaration (UTF-8 only), comments and a `<!DOCTYPE>` without an internal subset (so no entity is ever declared,
/// and none but XML's five and character references is expanded). Text is taken as XML 1.0 gives it: CDATA sections
/// as they are, line ends normalised to line feeds, characters XML cannot carry refused. Errors name their line and
/// column. Linear in the input; arrays and dictionaries nest at most `maximumDepth` levels.
///
/// Foundation's `XMLParser` (libxml2) is not used: on Linux it reads on past a missing end tag or trailing content,
/// fails on large documents read from memory, and leaks on its error paths.
struct XMLPropertyListReader {
    private let bytes: [UInt8]
    private var index = 0
    private let maximumDepth: Int

    init(_ bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    /// Reads the whole input as one property list.
    mutating func read() throws(XMLPropertyListError) -> PropertyListValue {
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw XMLPropertyListError(message: "XML: the document is not UTF-8")
        }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        try skipMisc(inProlog: true)
        let root = try startTag()
        let value: PropertyListValue
        if root.name == "plist" {
            guard !root.isEmpty else { throw failure("an empty <plist>") }
            try skipMisc(inProlog: false)
            guard !at("</") else { throw failure("an empty <plist>") }
            value = try self.value(try startTag(), depth: 0)
            try skipMisc(inProlog: false)
            guard at("</") else { throw failure("more than one value in <plist>") }
            try endTag("plist")
        } else {
            value = try self.value(root, depth: 0)
        }
        try skipMisc(inProlog: false)
        guard index == bytes.count else { throw failure("content after the end of the property list") }
        return value
    }

    // MARK: Values

    private struct Tag {
        var name: String
        /// Where its `<` is.
        var start: Int
        /// `<name/>`: no content, no end tag.
        var isEmpty: Bool
    }

    /// The value of the element whose start tag was just read.
    private mutating func value(_ tag: Tag, depth: Int) throws(XMLPropertyListError) -> PropertyListValue {
        switch tag.name {
        case "array", "dict":
            guard depth < maximumDepth else {
                throw failure("arrays and dictionaries nested more than \(maximumDepth) levels deep", at: tag.start)
            }
            return tag.name == "array" ? try array(tag, depth: depth) : try dictionary(tag, depth: depth)
        case "string": return .string(try text(of: tag))
        case "integer":
            let content = try text(of: tag)
            guard let integer = Int64(content.trimmingXMLSpace) else { throw failure("bad <integer> \(content)") }
            return .integer(integer)
        case "real":
            let content = try text(of: tag)
            guard let real = Double(content.trimmingXMLSpace), real.isFinite else {
                throw failure("bad <real> \(content)")
            }
            return .real(real)
        case "true", "false":
            guard try text(of: tag).isEmpty else { throw failure("<\(tag.name)> holds text") }
            return .boolean(tag.name == "true")
        case "date":
            let content = try text(of: tag)
            guard let date = ISO8601.date(from: String(content.trimmingXMLSpace)) else {
                throw failure("bad <date> \(content)")
            }
            return .date(date)
        case "data":
            guard let data = Data(base64Encoded: try text(of: tag).filter { !$0.isWhitespace }) else {
                throw failure("bad <data>")
            }
            return .data(data)
        case "key": throw failure("<key> outside a <dict>", at: tag.start)
        default: throw failure("unknown element <\(tag.name)>", at: tag.start)
        }
    }

    private mutating func array(_ tag: Tag, depth: Int) throws(XMLPropertyListError) -> PropertyListValue {
        var elements: [PropertyListValue] = []
        guard !tag.isEmpty else { return .array(elements) }
        while true {
            try skipMisc(inProlog: false)
            if at("</") {
                try endTag("array")
                return .array(elements)
            }
            elements.append(try value(try startTag(), depth: depth + 1))
        }
    }

    private mutating func dictionary(_ tag: Tag, depth: Int) throws(XMLPropertyListError) -> PropertyListValue {
        var entries: [String: PropertyListValue] = [:]
        if !tag.isEmpty {
            while true {
                try skipMisc(inProlog: false)
                if at("</") {
                    try endTag("dict")
                    break
                }
                let keyTag = try startTag()
                guard keyTag.name == "key" else {
                    throw failure("a value in a <dict> without its <key>", at: keyTag.start)
                }
                let key = try text(of: keyTag)
                try skipMisc(inProlog: false)
                guard !at("</") else { throw failure("the key \(key) without a value") }
                let element = try value(try startTag(), depth: depth + 1)
                guard entries.updateValue(element, forKey: key) == nil else {
                    throw failure("the key \(key) twice in a <dict>")
                }
            }
        }
        return entries == ["$null": true] ? .null : .dictionary(entries)
    }

    /// The text of an element that holds only text (character data, references, CDATA and comments), up to its end
    /// tag, which it reads.
    private mutating func text(of tag: Tag) throws(XMLPropertyListError) -> String {
        guard !tag.isEmpty else { return "" }
        var text: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "<"):
                if at("</") {
                    try endTag(tag.name)
                    return String(decoding: text, as: UTF8.self)
                } else if at("<![CDATA[") {
                    index += 9
                    guard let end = find("]]>") else { throw failure("a CDATA section without its end") }
                    text += bytes[index..<end]
                    index = end + 3
                } else if at("<!--") {
                    try comment()
                } else {
                    throw failure("an element inside <\(tag.name)>")
                }
            case UInt8(ascii: "&"):
                text += try reference()
            case UInt8(ascii: "\r"):
                // XML 1.0 §2.11: CR LF and a lone CR are read as LF.
                index += 1
                if index < bytes.count && bytes[index] == UInt8(ascii: "\n") { index += 1 }
                text.append(UInt8(ascii: "\n"))
            default:
                guard byte >= 0x20 || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") else {
                    throw failure(
                        "the control character U+\(String(byte, radix: 16, uppercase: true)), which XML 1.0 "
                            + "cannot carry")
                }
                text.append(byte)
                index += 1
            }
        }
        throw failure("<\(tag.name)> without its end tag")
    }

    /// `&lt;` and the other four, or a character reference: the UTF-8 bytes it stands for.
    private mutating func reference() throws(XMLPropertyListError) -> [UInt8] {
        let start = index
        guard let end = bytes[index...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else {
            throw failure("a & that starts no reference (write &amp;)")
        }
        let name = String(decoding: bytes[(start + 1)..<end], as: UTF8.self)
        index = end + 1
        switch name {
        case "lt": return [UInt8(ascii: "<")]
        case "gt": return [UInt8(ascii: ">")]
        case "amp": return [UInt8(ascii: "&")]
        case "quot": return [UInt8(ascii: "\"")]
        case "apos": return [UInt8(ascii: "'")]
        default:
            var code: UInt32?
            if name.hasPrefix("#x") {
                code = UInt32(name.dropFirst(2), radix: 16)
            } else if name.hasPrefix("#") {
                code = UInt32(name.dropFirst(), radix: 10)
            } else {
                index = start
                throw failure("the entity &\(name); (only &lt; &gt; &amp; &quot; &apos; and character references)")
            }
            guard let code, Self.isXMLCharacter(code), let scalar = Unicode.Scalar(code) else {
                index = start
                throw failure("&\(name); is no character XML 1.0 can carry")
            }
            return Array(String(Character(scalar)).utf8)
        }
    }

    /// XML 1.0's `Char`.
    private static func isXMLCharacter(_ code: UInt32) -> Bool {
        switch code {
        case 0x9, 0xA, 0xD, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: true
        default: false
        }
    }

    // MARK: Markup

    /// `<name attributes>` or `<name attributes/>`; the attributes are checked for form and dropped.
    private mutating func startTag() throws(XMLPropertyListError) -> Tag {
        guard index < bytes.count else { throw failure("the document ends early") }
        guard bytes[index] == UInt8(ascii: "<"), !at("</") else {
            throw failure(at("</") ? "an end tag where a value was expected" : "text where an element was expected")
        }
        let start = index
        index += 1
        let name = try self.name()
        var attributes: Set<String> = []
        while true {
            let hadSpace = skipSpace()
            if at("/>") {
                index += 2
                return Tag(name: name, start: start, isEmpty: true)
            }
            if at(">") {
                index += 1
                return Tag(name: name, start: start, isEmpty: false)
            }
            guard hadSpace else { throw failure("a malformed <\(name)> tag") }
            let attribute = try self.name()
            guard attributes.insert(attribute).inserted else { throw failure("the attribute \(attribute) twice") }
            skipSpace()
            guard at("=") else { throw failure("the attribute \(attribute) without a value") }
            index += 1
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
                throw failure("the attribute \(attribute)'s value is not quoted")
            }
            let quote = bytes[index]
            index += 1
            guard let end = bytes[index...].firstIndex(of: quote), !bytes[index..<end].contains(UInt8(ascii: "<"))
            else { throw failure("the attribute \(attribute)'s value is not closed") }
            index = end + 1
        }
    }

    private mutating func endTag(_ name: String) throws(XMLPropertyListError) {
        let start = index
        index += 2
        let found = try self.name()
        skipSpace()
        guard found == name, at(">") else {
            index = start
            throw failure("</\(found)> where </\(name)> was expected")
        }
        index += 1
    }

    private mutating func name() throws(XMLPropertyListError) -> String {
        let start = index
        while index < bytes.count, Self.isNameByte(bytes[index], first: index == start) { index += 1 }
        guard index > start else { throw failure("a malformed tag") }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private static func isNameByte(_ byte: UInt8, first: Bool) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "_"),
            UInt8(ascii: ":"):
            true
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."): !first
        default: false
        }
    }

    /// White space, comments and processing instructions; in the prolog also the XML declaration and a
    /// `<!DOCTYPE>` (without an internal subset).
    private mutating func skipMisc(inProlog: Bool) throws(XMLPropertyListError) {
        while true {
            skipSpace()
            if at("<!--") {
                try comment()
            } else if at("<?") {
                let start = index
                guard let end = find("?>") else { throw failure("a processing instruction without its end") }
                let instruction = String(decoding: bytes[start..<end], as: UTF8.self).lowercased()
                if instruction.hasPrefix("<?xml "), let range = instruction.range(of: "encoding="),
                    !instruction[range.upperBound...].dropFirst().hasPrefix("utf-8")
                {
                    throw failure("an encoding other than UTF-8")
                }
                index = end + 2
            } else if inProlog && at("<!DOCTYPE") {
                try doctype()
            } else {
                return
            }
        }
    }

    private mutating func comment() throws(XMLPropertyListError) {
        index += 4
        guard let end = find("-->") else { throw failure("a comment without its end") }
        index = end + 3
    }

    /// `<!DOCTYPE plist PUBLIC "..." "...">`: skipped; an internal subset (`[...]`), where entities would be
    /// declared, is refused.
    private mutating func doctype() throws(XMLPropertyListError) {
        index += 9
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: ">"):
                index += 1
                return
            case UInt8(ascii: "["):
                throw failure("entity declarations are not allowed (a DOCTYPE with an internal subset)")
            case UInt8(ascii: "\""), UInt8(ascii: "'"):
                let quote = bytes[index]
                index += 1
                guard let end = bytes[index...].firstIndex(of: quote) else { break }
                index = end + 1
            default:
                index += 1
            }
        }
        throw failure("a <!DOCTYPE> without its end")
    }

    @discardableResult
    private mutating func skipSpace() -> Bool {
        let start = index
        while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
        return index > start
    }

    fileprivate static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x9 || byte == 0xA || byte == 0xD
    }

    private func at(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { return false }
        return literal.withUTF8Buffer { literal in
            for offset in 0..<count where bytes[index + offset] != literal[offset] { return false }
            return true
        }
    }

    /// Where `literal` next starts, from the current position.
    private func find(_ literal: StaticString) -> Int? {
        let needle = literal.withUTF8Buffer { Array($0) }
        return bytes[index...].firstRange(of: needle)?.lowerBound
    }

    /// An error at `position` (the current one by default), with its line and column (1-based, columns in bytes).
    private func failure(_ message: String, at position: Int? = nil) -> XMLPropertyListError {
        let end = min(position ?? index, bytes.count)
        let line = bytes[..<end].count(where: { $0 == UInt8(ascii: "\n") }) + 1
        let column = end - (bytes[..<end].lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0) + 1
        return XMLPropertyListError(message: "XML line \(line), column \(column): \(message)")
    }
}

extension String {
    /// Without XML white space (space, tab, line feed, carriage return) at either end.
    fileprivate var trimmingXMLSpace: Substring {
        let utf8 = self.utf8
        guard let first = utf8.firstIndex(where: { !XMLPropertyListReader.isSpace($0) }),
            let last = utf8.lastIndex(where: { !XMLPropertyListReader.isSpace($0) })
        else { return "" }
        return self[first...last]
    }
}
