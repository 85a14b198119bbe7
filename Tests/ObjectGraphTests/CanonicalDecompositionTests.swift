import Foundation
import Testing

@testable import ObjectGraph

struct CanonicalDecompositionTests {
    /// The table agrees with Foundation for every scalar it covers and below, alone and in words.
    @Test func matchesFoundationForLatinText() {
        for value in UInt32(0x20)..<0x180 {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let text = "a" + String(Character(scalar)) + "z"
            #expect(
                CanonicalDecomposition.of(text).unicodeScalars.elementsEqual(
                    text.decomposedStringWithCanonicalMapping.unicodeScalars), "U+\(String(value, radix: 16))")
        }
        // Beyond the table (and text already holding combining marks), Foundation decomposes.
        for text in ["Ǖber", "e\u{301}cru", "ệ", "한국어", "Øre", "Ångström"] {
            #expect(
                CanonicalDecomposition.of(text).unicodeScalars.elementsEqual(
                    text.decomposedStringWithCanonicalMapping.unicodeScalars), "\(text)")
        }
    }
}
