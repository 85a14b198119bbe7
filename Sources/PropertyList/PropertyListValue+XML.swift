import Foundation

/// Why an XML property list could not be read.
public struct XMLPropertyListError: Error, Sendable, CustomStringConvertible {
    public var message: String
    /// Where in the document, when the document is at fault (1-based; columns count bytes).
    public var line: Int?
    public var column: Int?
    public var description: String { message }

    public init(message: String, line: Int? = nil, column: Int? = nil) {
        self.message = message
        self.line = line
        self.column = column
    }
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
            for (key, element) in dictionary.sorted(by: { $0.key.precedesByCodePoints($1.key) }) {
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

    /// Reads an XML property list, as written by `xmlPropertyList()` or by Cocoa (see `XMLPropertyListReader`: only
    /// well-formed XML, no entity declarations); arrays and dictionaries may nest `maximumDepth` levels deep (as
    /// for JSON), and a dictionary's keys are unique.
    public init(
        xmlPropertyList bytes: [UInt8], maximumDepth: Int = PropertyListValue.valueDepthLimit
    ) throws(XMLPropertyListError) {
        var reader = XMLPropertyListReader(bytes, maximumDepth: maximumDepth)
        self = try reader.read()
    }
}
