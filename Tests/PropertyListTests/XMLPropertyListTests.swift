import Foundation
import PropertyList
import Testing

struct XMLPropertyListTests {
    @Test func roundTripsEveryType() throws {
        let value: PropertyListValue = [
            "string": "a < b & c", "integer": -42, "real": 2.5, "whole real": 3.0, "yes": true, "no": false,
            "date": .date(Date(timeIntervalSince1970: 1_795_558_340.123)), "data": .data(Data([1, 2, 3])),
            "array": [1, nil, ["nested": "x"]], "empty": [:],
        ]
        let xml = value.xmlPropertyList()
        let text = String(decoding: xml, as: UTF8.self)
        #expect(text.contains("<!DOCTYPE plist"))
        #expect(text.contains("<string>a &lt; b &amp; c</string>"))
        #expect(text.contains("<real>3.0</real>"))
        #expect(try PropertyListValue(xmlPropertyList: xml) == value)
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
