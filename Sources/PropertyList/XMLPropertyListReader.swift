import Foundation

/// A strict reader of XML property lists (Apple's `PropertyList-1.0` DTD) over UTF-8 bytes.
///
/// Only well-formed XML 1.0 is read: every element closed in order, one root (`<plist>` holding one value, or the
/// value itself), nothing after it but white space, comments and processing instructions. The prolog may hold an XML
/// declaration (first, version 1.x, UTF-8 only), comments, processing instructions and one `<!DOCTYPE>` without an
/// internal subset (so no entity is ever declared, and none but XML's five and character references is expanded).
/// Character data, CDATA sections, comments and attribute values may hold only characters XML 1.0 carries; line ends
/// (CR LF, CR) are read as line feeds everywhere. Errors carry their line and column (lines end at LF, CR LF or
/// CR; columns count bytes). Linear in the input; arrays and dictionaries nest at most `maximumDepth` levels.
///
/// Foundation's `XMLParser` (libxml2) is not used: on Linux it reads on past a missing end tag or trailing content,
/// and leaks on its error paths.
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
        if at("<?xml") && index + 5 < bytes.count && Self.isSpace(bytes[index + 5]) { try declaration() }
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
            let number = content.trimmingXMLSpace
            // Decimal only: Swift's `Double` also reads hexadecimal (`0x10`), `inf` and `nan`.
            guard Self.isDecimalReal(number), let real = Double(number), real.isFinite else {
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
            // XML's white space (space, tab, CR, LF) may break the base64 into lines; nothing else may be in it.
            let base64 = String(decoding: try text(of: tag).utf8.filter { !Self.isSpace($0) }, as: UTF8.self)
            guard let data = Base64.decode(base64) else {
                throw failure("bad <data>: not base64")
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
                    throw failure("the key \(key) twice in a <dict> (\(PropertyListValue.equivalentKeysNote))")
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
            switch bytes[index] {
            case UInt8(ascii: "<"):
                if at("</") {
                    guard text.withUnsafeBufferPointer({ StreamSafeText.isStreamSafe($0) }) else {
                        throw failure(StreamSafeText.violation, at: tag.start)
                    }
                    try endTag(tag.name)
                    return String(decoding: text, as: UTF8.self)
                } else if at("<![CDATA[") {
                    index += 9
                    guard let end = find("]]>") else { throw failure("a CDATA section without its end") }
                    try characters(upTo: end, into: &text)
                    index = end + 3
                } else if at("<!--") {
                    try comment()
                } else {
                    throw failure("an element inside <\(tag.name)>")
                }
            case UInt8(ascii: "&"):
                text += try reference()
            default:
                if at("]]>") { throw failure("]]> in text (write ]]&gt;)") }
                try character(into: &text)
            }
        }
        throw failure("<\(tag.name)> without its end tag")
    }

    /// Takes the characters up to `end` (a CDATA section's content) as they are but for line ends.
    private mutating func characters(upTo end: Int, into text: inout [UInt8]) throws(XMLPropertyListError) {
        while index < end { try character(into: &text) }
    }

    /// Takes the character at `index` (a CR or CR LF as an LF), refusing what XML 1.0 cannot carry; appends it to
    /// `text` when given.
    private mutating func character(into text: inout [UInt8]) throws(XMLPropertyListError) {
        let byte = bytes[index]
        if byte == UInt8(ascii: "\r") {
            // XML 1.0 §2.11: CR LF and a lone CR are read as LF.
            index += 1
            if index < bytes.count && bytes[index] == UInt8(ascii: "\n") { index += 1 }
            text.append(UInt8(ascii: "\n"))
            return
        }
        guard byte >= 0x20 || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") else {
            throw failure("the control character U+\(String(format: "%04X", byte)), which XML 1.0 cannot carry")
        }
        // U+FFFE and U+FFFF (EF BF BE, EF BF BF) are no XML characters either.
        if byte == 0xEF, index + 2 < bytes.count, bytes[index + 1] == 0xBF, bytes[index + 2] >= 0xBE {
            throw failure("U+FFF\(bytes[index + 2] == 0xBE ? "E" : "F"), which XML 1.0 cannot carry")
        }
        text.append(byte)
        index += 1
    }

    /// Checks the characters up to `end` (a comment, a processing instruction, an attribute value) without keeping
    /// them.
    private mutating func skipCharacters(upTo end: Int) throws(XMLPropertyListError) {
        var discarded: [UInt8] = []
        while index < end {
            try character(into: &discarded)
            discarded.removeAll(keepingCapacity: true)
        }
    }

    /// `&lt;` and the other four, or a character reference: the UTF-8 bytes it stands for.
    private mutating func reference() throws(XMLPropertyListError) -> [UInt8] {
        let start = index
        let candidate = bytes[(index + 1)...].prefix { Self.isNameByte($0, first: false) || $0 == UInt8(ascii: "#") }
        let end = candidate.endIndex
        guard candidate.count < 12, end < bytes.count, bytes[end] == UInt8(ascii: ";") else {
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
            if name.hasPrefix("#x"), name.utf8.dropFirst(2).allSatisfy(\.isHexDigit) {
                code = UInt32(name.dropFirst(2), radix: 16)
            } else if name.hasPrefix("#"), name.utf8.dropFirst().allSatisfy(\.isDecimalDigit) {
                code = UInt32(name.dropFirst(), radix: 10)
            } else if !name.hasPrefix("#") {
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

    /// `1`, `-1.5`, `.5`, `1.`, `2.5e-3`: a decimal number as plists write reals.
    private static func isDecimalReal(_ text: Substring) -> Bool {
        var bytes = text.utf8[...]
        if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        let integer = bytes.prefix(while: \.isDecimalDigit)
        bytes = bytes.dropFirst(integer.count)
        var digits = integer.count
        if bytes.first == UInt8(ascii: ".") {
            let fraction = bytes.dropFirst().prefix(while: \.isDecimalDigit)
            digits += fraction.count
            bytes = bytes.dropFirst(1 + fraction.count)
        }
        guard digits > 0 else { return false }
        if let e = bytes.first, e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                bytes = bytes.dropFirst()
            }
            let exponent = bytes.prefix(while: \.isDecimalDigit)
            guard !exponent.isEmpty else { return false }
            bytes = bytes.dropFirst(exponent.count)
        }
        return bytes.isEmpty
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
            _ = try attributeValue(of: attribute)
        }
    }

    /// `= "value"` or `= 'value'` after an attribute's name: its value, references expanded.
    private mutating func attributeValue(of attribute: String) throws(XMLPropertyListError) -> String {
        skipSpace()
        guard at("=") else { throw failure("the attribute \(attribute) without a value") }
        index += 1
        skipSpace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
            throw failure("the attribute \(attribute)'s value is not quoted")
        }
        let quote = bytes[index]
        index += 1
        var value: [UInt8] = []
        while index < bytes.count && bytes[index] != quote {
            switch bytes[index] {
            case UInt8(ascii: "<"): throw failure("< in the attribute \(attribute)'s value")
            case UInt8(ascii: "&"): value += try reference()
            default: try character(into: &value)
            }
        }
        guard index < bytes.count else { throw failure("the attribute \(attribute)'s value is not closed") }
        index += 1
        return String(decoding: value, as: UTF8.self)
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

    /// `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` at the start: a version 1.x, and UTF-8 if an
    /// encoding is named.
    private mutating func declaration() throws(XMLPropertyListError) {
        index += 5
        var names: [String] = []
        while true {
            let hadSpace = skipSpace()
            if at("?>") {
                index += 2
                break
            }
            guard hadSpace else { throw failure("a malformed XML declaration") }
            let name = try self.name()
            let value = try attributeValue(of: name)
            names.append(name)
            switch name {
            case "version":
                guard value.hasPrefix("1."), value.count > 2, value.utf8.dropFirst(2).allSatisfy(\.isDecimalDigit)
                else { throw failure("XML version \(value) (only 1.x)") }
            case "encoding":
                guard value.lowercased() == "utf-8" else { throw failure("the encoding \(value) (only UTF-8)") }
            case "standalone":
                guard value == "yes" || value == "no" else { throw failure("standalone=\"\(value)\"") }
            default:
                throw failure("\(name) in the XML declaration")
            }
        }
        let order = ["version", "encoding", "standalone"]
        guard names.first == "version", names == order.filter(names.contains) else {
            throw failure("an XML declaration whose version, encoding and standalone are missing or out of order")
        }
    }

    /// White space, comments and processing instructions; in the prolog also one `<!DOCTYPE>`.
    private mutating func skipMisc(inProlog: Bool) throws(XMLPropertyListError) {
        var sawDoctype = false
        while true {
            skipSpace()
            if at("<!--") {
                try comment()
            } else if at("<?") {
                try processingInstruction()
            } else if inProlog && at("<!DOCTYPE") {
                guard !sawDoctype else { throw failure("a second <!DOCTYPE>") }
                sawDoctype = true
                try doctype()
            } else {
                return
            }
        }
    }

    /// `<!-- ... -->`, whose text holds no `--`.
    private mutating func comment() throws(XMLPropertyListError) {
        index += 4
        guard let dashes = find("--") else { throw failure("a comment without its end") }
        try skipCharacters(upTo: dashes)
        guard at("-->") else { throw failure("-- inside a comment") }
        index += 3
    }

    /// `<?target ...?>`; the target `xml` (in any case) is the declaration's, at the very start only.
    private mutating func processingInstruction() throws(XMLPropertyListError) {
        index += 2
        let target = try name()
        guard target.lowercased() != "xml" else { throw failure("an XML declaration that is not at the start") }
        guard let end = find("?>") else { throw failure("a processing instruction without its end") }
        if index < end && !skipSpace() { throw failure("a malformed processing instruction") }
        try skipCharacters(upTo: end)
        index = end + 2
    }

    /// `<!DOCTYPE name>`, `<!DOCTYPE name SYSTEM "uri">` or `<!DOCTYPE name PUBLIC "id" "uri">`: checked and skipped;
    /// an internal subset (`[...]`), where entities would be declared, is refused.
    private mutating func doctype() throws(XMLPropertyListError) {
        index += 9
        guard skipSpace() else { throw failure("a malformed <!DOCTYPE>") }
        _ = try name()
        var hadSpace = skipSpace()
        let literals = at("PUBLIC") ? 2 : at("SYSTEM") ? 1 : 0
        if literals > 0 {
            guard hadSpace else { throw failure("a malformed <!DOCTYPE>") }
            index += 6
            for _ in 0..<literals {
                guard skipSpace(), index < bytes.count,
                    bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'")
                else { throw failure("a malformed <!DOCTYPE>") }
                let quote = bytes[index]
                index += 1
                guard let end = bytes[index...].firstIndex(of: quote) else { throw failure("a <!DOCTYPE> unclosed") }
                try skipCharacters(upTo: end)
                index = end + 1
            }
            hadSpace = skipSpace()
        }
        if at("[") { throw failure("entity declarations are not allowed (a DOCTYPE with an internal subset)") }
        guard at(">") else { throw failure("a malformed <!DOCTYPE>") }
        index += 1
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

    /// An error at `position` (the current one by default), with its line and column (1-based; a line ends at LF,
    /// CR LF or CR; columns count bytes).
    private func failure(_ message: String, at position: Int? = nil) -> XMLPropertyListError {
        let end = min(position ?? index, bytes.count)
        var line = 1
        var lineStart = 0
        for offset in 0..<end {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\n")
                || (byte == UInt8(ascii: "\r") && offset + 1 < bytes.count
                    && bytes[offset + 1] != UInt8(ascii: "\n"))
            {
                line += 1
                lineStart = offset + 1
            }
        }
        return XMLPropertyListError(
            message: "XML line \(line), column \(end - lineStart + 1): \(message)", line: line,
            column: end - lineStart + 1)
    }
}

extension UInt8 {
    fileprivate var isDecimalDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }
    fileprivate var isHexDigit: Bool {
        isDecimalDigit || (self >= UInt8(ascii: "a") && self <= UInt8(ascii: "f"))
            || (self >= UInt8(ascii: "A") && self <= UInt8(ascii: "F"))
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
