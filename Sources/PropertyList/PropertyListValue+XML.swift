import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Why an XML property list could not be read.
public struct XMLPropertyListError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

extension PropertyListValue {
    /// This value as an XML property list (Apple's `PropertyList-1.0` DTD).
    ///
    /// A property list has no null: null, in a dictionary as elsewhere, is written as the marker dictionary
    /// `{"$null": true}`, which `init(xmlPropertyList:)` reads back as null. (A null dictionary entry is not left
    /// out: `PUT /store` reads an absent attribute as the model's default, so the export would not read back.)
    /// Lines are indented one tab per level down to `maximumIndent` levels (so that the size stays linear in the
    /// depth). A carriage return is written `&#13;` (an XML reader would read a raw one as a line
    /// feed); a string with another control character (but tab and line feed) cannot be written, as XML 1.0 has no
    /// way to carry it, and throws.
    public func xmlPropertyList() throws(XMLPropertyListError) -> [UInt8] {
        var out = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">

            """
        try Self.writeXML(self, indent: 0, into: &out)
        out += "</plist>\n"
        return Array(out.utf8)
    }

    private static let maximumIndent = 16

    private static func writeXML(_ value: PropertyListValue, indent: Int, into out: inout String)
        throws(XMLPropertyListError)
    {
        let pad = String(repeating: "\t", count: min(indent, maximumIndent))
        switch value {
        case .null: out += "\(pad)<dict>\n\(pad)\t<key>$null</key>\n\(pad)\t<true/>\n\(pad)</dict>\n"
        case .boolean(let b): out += b ? "\(pad)<true/>\n" : "\(pad)<false/>\n"
        case .integer(let i): out += "\(pad)<integer>\(i)</integer>\n"
        case .real(let r): out += "\(pad)<real>\(r.description)</real>\n"
        case .string(let s): out += "\(pad)<string>\(try escape(s))</string>\n"
        case .date(let d):
            // The DTD's form, `YYYY-MM-DDTHH:MM:SSZ`, which plist readers insist on: milliseconds are dropped, as
            // Apple's writer drops fractions of a second (JSON keeps them).
            out += "\(pad)<date>\(ISO8601.string(from: d, fractionalSeconds: false))</date>\n"
        case .data(let d): out += "\(pad)<data>\(d.base64EncodedString())</data>\n"
        case .array(let elements):
            out += "\(pad)<array>\n"
            for element in elements { try writeXML(element, indent: indent + 1, into: &out) }
            out += "\(pad)</array>\n"
        case .dictionary(let dictionary):
            out += "\(pad)<dict>\n"
            for (key, element) in dictionary.sorted(by: { $0.key < $1.key }) {
                out += "\(pad)\t<key>\(try escape(key))</key>\n"
                try writeXML(element, indent: indent + 1, into: &out)
            }
            out += "\(pad)</dict>\n"
        }
    }

    private static func escape(_ s: String) throws(XMLPropertyListError) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\r": out += "&#13;"
            case "\t", "\n": out.unicodeScalars.append(scalar)
            case "\u{0}"..."\u{1F}", "\u{FFFE}", "\u{FFFF}":
                let code = String(scalar.value, radix: 16, uppercase: true)
                let text = String(s.prefix(40)).debugDescription
                throw XMLPropertyListError(message: "The text \(text) holds U+\(code), which XML 1.0 cannot carry.")
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Reads an XML property list, as written by `xmlPropertyList()` or by Cocoa; arrays and dictionaries may nest
    /// `maximumDepth` levels deep (as for JSON), a dictionary's keys are unique, and entity declarations are refused.
    public init(
        xmlPropertyList bytes: [UInt8], maximumDepth: Int = PropertyListValue.valueDepthLimit
    ) throws(XMLPropertyListError) {
        // libxml2 expands declared entities without telling the delegate: the prolog must declare none.
        let prolog = bytes[..<(bytes.firstRange(of: Array("<plist".utf8))?.lowerBound ?? bytes.endIndex)]
        if prolog.firstRange(of: Array("<!ENTITY".utf8)) != nil {
            throw XMLPropertyListError(message: "entity declarations are not allowed")
        }
        let parser = XMLPropertyListParser(maximumDepth: maximumDepth)
        guard let value = parser.parse(Data(bytes)) else {
            throw XMLPropertyListError(message: parser.failure ?? "not an XML property list")
        }
        self = value
    }
}

/// A small SAX reader for XML property lists; Foundation's own reader on Linux loses the integer/real/boolean
/// distinction through NSNumber, and dates' milliseconds.
private final class XMLPropertyListParser: NSObject, XMLParserDelegate {
    private enum Frame {
        case array([PropertyListValue])
        case dictionary([String: PropertyListValue], pendingKey: String?)
    }

    private var stack: [Frame] = []
    private var text = ""
    private var result: PropertyListValue?
    private let maximumDepth: Int
    var failure: String?

    init(maximumDepth: Int) {
        self.maximumDepth = maximumDepth
    }

    func parse(_ data: Data) -> PropertyListValue? {
        let parser = XMLParser(data: data)
        parser.delegate = self
        parser.shouldResolveExternalEntities = false
        guard parser.parse(), failure == nil else {
            if failure == nil { failure = parser.parserError.map { "XML: \($0.localizedDescription)" } }
            return nil
        }
        return result
    }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        text = ""
        guard elementName == "array" || elementName == "dict" else { return }
        guard stack.count < maximumDepth else {
            return fail(parser, "arrays and dictionaries nested more than \(maximumDepth) levels deep")
        }
        stack.append(elementName == "array" ? .array([]) : .dictionary([:], pendingKey: nil))
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        text += string
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        guard let string = String(data: CDATABlock, encoding: .utf8) else { return fail(parser, "CDATA is not UTF-8") }
        text += string
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        let value: PropertyListValue
        switch elementName {
        case "plist": return
        case "key":
            guard case .dictionary(let d, nil)? = stack.last else { return fail(parser, "<key> outside a <dict>") }
            stack[stack.count - 1] = .dictionary(d, pendingKey: text)
            return
        case "string": value = .string(text)
        case "integer":
            guard let i = Int64(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                return fail(parser, "bad <integer> \(text)")
            }
            value = .integer(i)
        case "real":
            guard let r = Double(text.trimmingCharacters(in: .whitespacesAndNewlines)), r.isFinite else {
                return fail(parser, "bad <real> \(text)")
            }
            value = .real(r)
        case "true": value = .boolean(true)
        case "false": value = .boolean(false)
        case "date":
            guard let d = ISO8601.date(from: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                return fail(parser, "bad <date> \(text)")
            }
            value = .date(d)
        case "data":
            let cleaned = text.filter { !$0.isWhitespace }
            guard let d = Data(base64Encoded: cleaned) else { return fail(parser, "bad <data>") }
            value = .data(d)
        case "array":
            guard case .array(let elements)? = stack.popLast() else { return fail(parser, "unbalanced <array>") }
            value = .array(elements)
        case "dict":
            guard case .dictionary(let d, nil)? = stack.popLast() else { return fail(parser, "unbalanced <dict>") }
            value = d == ["$null": .boolean(true)] ? .null : .dictionary(d)
        default:
            return fail(parser, "unknown element <\(elementName)>")
        }
        text = ""
        // Popped and pushed again, so that the frame's array is not copied on every element.
        switch stack.popLast() {
        case nil:
            guard result == nil else { return fail(parser, "more than one value in <plist>") }
            result = value
        case .array(var elements)?:
            elements.append(value)
            stack.append(.array(elements))
        case .dictionary(var d, let key?)?:
            guard d.updateValue(value, forKey: key) == nil else {
                return fail(parser, "the key \(key) twice in a <dict>")
            }
            stack.append(.dictionary(d, pendingKey: nil))
        case .dictionary(_, nil)?:
            fail(parser, "a value in a <dict> without its <key>")
        }
    }

    private func fail(_ parser: XMLParser, _ message: String) {
        if failure == nil { failure = message }
        parser.abortParsing()
    }
}
