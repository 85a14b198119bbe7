import Foundation
import PropertyList
import Testing

struct XMLPropertyListTests {
    @Test func roundTripsEveryType() throws {
        let value: PropertyListValue = [
            "string": "a < b & c", "integer": -42, "real": 2.5, "whole real": 3.0, "yes": true, "no": false,
            "date": .date(Date(timeIntervalSince1970: 1_795_558_340)), "data": .data(Data([1, 2, 3])),
            "array": [1, nil, ["nested": "x"]], "empty": [:],
        ]
        let xml = try value.xmlPropertyList()
        let text = String(decoding: xml, as: UTF8.self)
        #expect(text.contains("<!DOCTYPE plist"))
        #expect(text.contains("<string>a &lt; b &amp; c</string>"))
        #expect(text.contains("<real>3.0</real>"))
        #expect(try PropertyListValue(xmlPropertyList: xml) == value)
    }

    @Test func writesDatesInTheDTDFormWithoutMilliseconds() throws {
        let value: PropertyListValue = ["date": .date(Date(timeIntervalSince1970: 1_795_558_340.987))]
        let text = String(decoding: try value.xmlPropertyList(), as: UTF8.self)
        #expect(text.contains("<date>2026-11-24T22:12:20Z</date>"))
        #expect(
            try PropertyListValue(xmlPropertyList: try value.xmlPropertyList())
                == ["date": .date(Date(timeIntervalSince1970: 1_795_558_340))])
        // Fractions are still read.
        let fraction = Array("<plist><date>2026-11-24T22:12:20.5Z</date></plist>".utf8)
        #expect(try PropertyListValue(xmlPropertyList: fraction) == .date(Date(timeIntervalSince1970: 1_795_558_340.5)))
    }

    @Test func writesNullDictionaryEntriesAsTheMarker() throws {
        // An entry left out would read back as absent, which an import takes as "the model's default".
        let value: PropertyListValue = ["present": 1, "null": nil]
        let xml = try value.xmlPropertyList()
        #expect(String(decoding: xml, as: UTF8.self).contains("\t<key>null</key>\n\t<dict>\n\t\t<key>$null</key>"))
        #expect(try PropertyListValue(xmlPropertyList: xml) == value)
    }

    /// As for JSON: a client's value nests at most `valueDepthLimit` levels (every reader of it recurses).
    @Test func refusesNestingPastTheDepthLimit() throws {
        func nested(_ depth: Int) -> [UInt8] {
            Array(
                ("<plist>" + String(repeating: "<array>", count: depth) + String(repeating: "</array>", count: depth)
                    + "</plist>").utf8)
        }
        #expect(throws: XMLPropertyListError.self) { try PropertyListValue(xmlPropertyList: nested(1001)) }
        #expect(throws: XMLPropertyListError.self) { try PropertyListValue(xmlPropertyList: nested(60_000)) }
        let value = try PropertyListValue(xmlPropertyList: nested(1000))
        var depth = 0
        var inner = value
        while case .array(let elements) = inner {
            depth += 1
            inner = elements.first ?? .null
        }
        #expect(depth == 1000)
        // Its export reads back, and stays linear in the depth (indentation stops deepening).
        let xml = try value.xmlPropertyList()
        #expect(xml.count < 60_000)
        #expect(try PropertyListValue(xmlPropertyList: xml) == value)
    }

    @Test func carriageReturnsRoundTrip_otherControlCharactersCannotBeWritten() throws {
        let value: PropertyListValue = ["text": "a\r\nb\rc\td"]
        #expect(try PropertyListValue(xmlPropertyList: try value.xmlPropertyList()) == value)
        #expect(throws: XMLPropertyListError.self) { try PropertyListValue.string("bell \u{7}").xmlPropertyList() }
    }

    @Test func readsCDATA_refusesEntitiesDuplicateKeysAndSecondValues() throws {
        let cdata = Array("<plist><string>a<![CDATA[<b> & c]]>d</string></plist>".utf8)
        #expect(try PropertyListValue(xmlPropertyList: cdata) == "a<b> & cd")
        let declarationInText = Array("<plist><string><![CDATA[<!ENTITY x>]]></string></plist>".utf8)
        #expect(try PropertyListValue(xmlPropertyList: declarationInText) == "<!ENTITY x>")
        let entity = Array(
            "<?xml version=\"1.0\"?><!DOCTYPE plist [<!ENTITY y \"YY\">]><plist><string>A&y;C</string></plist>".utf8)
        #expect(throws: XMLPropertyListError.self) { try PropertyListValue(xmlPropertyList: entity) }
        let twice = Array("<plist><dict><key>k</key><true/><key>k</key><false/></dict></plist>".utf8)
        #expect(throws: XMLPropertyListError.self) { try PropertyListValue(xmlPropertyList: twice) }
        let two = Array("<plist><array/><array/></plist>".utf8)
        #expect(throws: XMLPropertyListError.self) { try PropertyListValue(xmlPropertyList: two) }
    }

    /// libxml2 recovers from these and reads on; a property list must be well-formed.
    @Test(arguments: [
        "<plist><array><dict></array></plist>", "<plist><array/></plist><junk>", "<plist><array/></plist>trailing",
        "<plist><array><string>a</array></plist>",
    ])
    func rejectsXMLThatIsNotWellFormed(text: String) {
        #expect(throws: XMLPropertyListError.self) { try PropertyListValue(xmlPropertyList: Array(text.utf8)) }
    }

    @Test func readsWhatXMLAllows_asXML10ReadsIt() throws {
        let text = """
            \u{FEFF}<?xml version="1.0" encoding="UTF-8"?>
            <!-- a comment -->
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version='1.0'>
            <dict>
            \t<key>a &amp; b</key><string>&lt;&#233;&#x1F600;&gt; &quot;&apos;</string>
            \t<!-- between -->
            \t<key/><string/>
            \t<key>lines</key><string>one\r\ntwo\rthree&#13;</string>
            \t<key>n</key><integer> 42 </integer>
            </dict>
            </plist>
            <?after it?>

            """
        let value = try PropertyListValue(xmlPropertyList: Array(text.utf8))
        #expect(
            value == ["a & b": "<é😀> \"'", "": "", "lines": "one\ntwo\nthree\r", "n": 42])
    }

    /// Larger than `--max-body`'s default allows: the reader is linear in its input.
    @Test func readsALargeDocument() throws {
        let value = PropertyListValue.array((0..<60_000).map { .string("value \($0) ") })
        let xml = try value.xmlPropertyList()
        #expect(xml.count > 1_500_000)
        #expect(try PropertyListValue(xmlPropertyList: xml) == value)
    }

    @Test(
        arguments: [
            ("<plist><string>a&nbsp;b</string></plist>", "entity"),
            ("<plist><string>&#0;</string></plist>", "&#0;"),
            ("<plist><string>a\u{1}b</string></plist>", "control character"),
            ("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><plist><true/></plist>", "UTF-8"),
            ("<!DOCTYPE plist [<!ELEMENT plist ANY>]><plist><true/></plist>", "internal subset"),
            ("<plist><true>x</true></plist>", "holds text"),
            ("<plist><dict><key>k</key></dict></plist>", "without a value"),
            ("<plist><array x=1/></plist>", "not quoted"),
            ("<plist>\n  <array>\n    <foo/>\n  </array>\n</plist>", "line 3, column 5: unknown element <foo>"),
            ("<plist/>", "empty"),
            ("", "ends early"),
        ] + fuzzFindings)
    func refusesWithItsPlace(text: String, expected: String) {
        #expect {
            try PropertyListValue(xmlPropertyList: Array(text.utf8))
        } throws: { error in
            "\(error)".contains(expected)
        }
    }

    /// What a differential fuzz against expat found accepted: each is not well-formed XML 1.0 (or is a character
    /// XML cannot carry).
    static let fuzzFindings = [
        ("<plist><string><![CDATA[a\u{0}b]]></string></plist>", "U+0000"),
        ("<plist><string><![CDATA[a\u{1}b]]></string></plist>", "U+0001"),
        ("<plist><string>a\u{FFFF}b</string></plist>", "U+FFFF"),
        ("<plist><string>a\u{FFFE}b</string></plist>", "U+FFFE"),
        ("<?xml version=\"1.0\" encoding = \"ISO-8859-1\"?><plist><true/></plist>", "only UTF-8"),
        ("\n<?xml version=\"1.0\"?><plist><true/></plist>", "not at the start"),
        ("<?xml version=\"2.0\"?><plist><true/></plist>", "version 2.0"),
        ("<?xml version=\"1.0\" standalone=\"maybe\"?><plist><true/></plist>", "standalone"),
        ("<?xml encoding=\"UTF-8\" version=\"1.0\"?><plist><true/></plist>", "out of order"),
        ("<!-- a -- b --><plist><true/></plist>", "-- inside a comment"),
        ("<!-- a ---><plist><true/></plist>", "-- inside a comment"),
        ("<!-- \u{1} --><plist><true/></plist>", "U+0001"),
        ("<??><plist><true/></plist>", "malformed tag"),
        ("<?XmL y?><plist><true/></plist>", "not at the start"),
        ("<!DOCTYPE><plist><true/></plist>", "<!DOCTYPE>"),
        ("<!DOCTYPE plist><!DOCTYPE plist><plist><true/></plist>", "second <!DOCTYPE>"),
        ("<!DOCTYPE plist SYSEM \"a\"><plist><true/></plist>", "<!DOCTYPE>"),
        ("<plist><string a=\"&\">x</string></plist>", "starts no reference"),
        ("<plist><string a=\"&\" b=\"&lt;\">x</string></plist>", "starts no reference"),
        ("<plist><string>a & b;</string></plist>", "starts no reference"),
        ("<plist><string a=\"&foo;\">x</string></plist>", "&foo;"),
        ("<plist><string a=\"&#0;\">x</string></plist>", "&#0;"),
        ("<plist><string a=\"<\">x</string></plist>", "< in the attribute"),
        ("<plist><string>a]]>b</string></plist>", "]]>"),
        ("<plist><string>&#+65;</string></plist>", "starts no reference"),
        ("<plist><string>&#x+42;</string></plist>", "starts no reference"),
        ("<plist><string>&#x;</string></plist>", "&#x;"),
        ("<plist><real>0x10</real></plist>", "bad <real>"),
        ("<plist><real>0x1p3</real></plist>", "bad <real>"),
        ("<plist><real>1e</real></plist>", "bad <real>"),
        ("<plist><data>====</data></plist>", "not base64"),
        ("<plist><data>QUJ=</data></plist>", "not base64"),
        // Only XML's white space may break base64 into lines (a no-break space, U+2028 or U+3000 was dropped).
        ("<plist><data>QU\u{A0}JD</data></plist>", "not base64"),
        ("<plist><data>QU\u{2028}JD</data></plist>", "not base64"),
        ("<plist><data>QUJD\u{3000}</data></plist>", "not base64"),
        ("<plist><data>QUJD&#x85;</data></plist>", "not base64"),
        ("<plist>\r<dict>\r<key>a</key>\r<bogus/>\r</dict>\r</plist>", "line 4, column 1"),
        ("<plist><dict><key>\u{E9}</key><true/><key>e\u{301}</key><true/></dict></plist>", "same text to Unicode"),
    ]

    @Test func dataMayBeBrokenIntoLinesByXMLWhiteSpace() throws {
        let text = "<plist><data>\n\tQU\r\nJD \rRE\nU=\n</data></plist>"
        #expect(try PropertyListValue(xmlPropertyList: Array(text.utf8)) == .data(Data("ABCDE".utf8)))
    }

    /// XML 1.0 reads CR LF and CR as LF in CDATA sections too.
    @Test func cdataLineEndsAreLineFeeds_realsInEveryDecimalForm() throws {
        let text =
            "<plist><array><string><![CDATA[a\r\nb\rc]]></string>"
            + "<real>.5</real><real>1.</real><real>-2.5E+3</real><real>+7</real></array></plist>"
        #expect(try PropertyListValue(xmlPropertyList: Array(text.utf8)) == ["a\nb\nc", 0.5, 1.0, -2500.0, 7.0])
        let error = #expect(throws: XMLPropertyListError.self) {
            try PropertyListValue(xmlPropertyList: Array("<plist>\n  <bogus/></plist>".utf8))
        }
        #expect(error?.line == 2 && error?.column == 3)
    }

    /// As in JSON, text past Unicode's stream-safe limit (30 combining marks in a row) is refused, keys too.
    @Test func refusesTextPastTheStreamSafeLimit() throws {
        let marks = String(repeating: "\u{301}", count: 31)
        let thirtyMarks = String(repeating: "\u{301}", count: 30)  // (all one Character: `dropLast` drops them all)
        for body in ["<string>a\(marks)</string>", "<dict>\n<key>a&#x301;\(thirtyMarks)</key><true/></dict>"] {
            let error = #expect(throws: XMLPropertyListError.self) {
                try PropertyListValue(xmlPropertyList: Array("<plist>\(body)</plist>".utf8))
            }
            #expect(error?.message.contains("stream-safe") == true)
        }
        let thirty = "<plist><string>a\(thirtyMarks)</string></plist>"
        #expect(try PropertyListValue(xmlPropertyList: Array(thirty.utf8)) == .string("a" + thirtyMarks))
    }

    @Test func refusesBytesThatAreNotUTF8() {
        #expect(throws: XMLPropertyListError.self) {
            try PropertyListValue(
                xmlPropertyList: Array("<plist><string>".utf8) + [0xC3, 0x28] + Array("</string></plist>".utf8))
        }
    }

    @Test func rejectsMalformedXML() {
        #expect(throws: XMLPropertyListError.self) {
            try PropertyListValue(xmlPropertyList: Array("<plist><dict>".utf8))
        }
        #expect(throws: XMLPropertyListError.self) {
            try PropertyListValue(xmlPropertyList: Array("<plist><integer>x</integer></plist>".utf8))
        }
    }
}
