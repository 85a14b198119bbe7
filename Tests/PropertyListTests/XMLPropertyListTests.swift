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
        let xml = value.xmlPropertyList()
        let text = String(decoding: xml, as: UTF8.self)
        #expect(text.contains("<!DOCTYPE plist"))
        #expect(text.contains("<string>a &lt; b &amp; c</string>"))
        #expect(text.contains("<real>3.0</real>"))
        #expect(try PropertyListValue(xmlPropertyList: xml) == value)
    }

    @Test func writesDatesInTheDTDFormWithoutMilliseconds() throws {
        let value: PropertyListValue = ["date": .date(Date(timeIntervalSince1970: 1_795_558_340.987))]
        let text = String(decoding: value.xmlPropertyList(), as: UTF8.self)
        #expect(text.contains("<date>2026-11-24T22:12:20Z</date>"))
        #expect(
            try PropertyListValue(xmlPropertyList: value.xmlPropertyList())
                == ["date": .date(Date(timeIntervalSince1970: 1_795_558_340))])
        // Fractions are still read.
        let fraction = Array("<plist><date>2026-11-24T22:12:20.5Z</date></plist>".utf8)
        #expect(try PropertyListValue(xmlPropertyList: fraction) == .date(Date(timeIntervalSince1970: 1_795_558_340.5)))
    }

    @Test func leavesNullDictionaryEntriesOut() throws {
        let value: PropertyListValue = ["present": 1, "absent": nil]
        #expect(try PropertyListValue(xmlPropertyList: value.xmlPropertyList()) == ["present": 1])
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
