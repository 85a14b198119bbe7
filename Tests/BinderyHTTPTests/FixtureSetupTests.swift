import Bindery
import BinderyHTTP
import Foundation
import ObjectGraph
import Testing

/// What the service reads at start besides the store: the fixture's `controllers.json` and `defaults.json`, and the
/// saved defaults in the data directory. A problem is the service's `setupError` (the serve command stops on it).
struct FixtureSetupTests {
    /// A copy of the employees fixture, and an empty data directory, removed after `body`.
    func withFixtureCopy(_ body: (_ fixture: String, _ data: String) throws -> Void) throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("bindery-setup-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: packageRoot + "/Fixtures/employees", toPath: root + "/fixture")
        try body(root + "/fixture", root + "/data")
    }

    /// The setup error of a service over `fixture` and `data`.
    func setupError(fixture: String, data: String) throws -> ObjectGraphError? {
        let document = try Document(fixtureDirectory: fixture, dataDirectory: data, options: .init(fsync: .never))
        defer { document.close() }
        return BinderyService(configuration: .init(publicDirectory: packageRoot + "/Public"), document: document)
            .setupError
    }

    /// Only a missing file means "none": one that is there but cannot be read (here a directory, or a link to
    /// nothing) stops the service, naming it, instead of starting without its controllers or defaults.
    @Test(arguments: ["fixture/controllers.json", "fixture/defaults.json", "data/defaults.json"])
    func anUnreadableFileIsASetupErrorNamingIt(file: String) throws {
        for kind in ["directory", "dangling link"] {
            try withFixtureCopy { fixture, data in
                // A first start seeds the data directory and saves the defaults file.
                #expect(try setupError(fixture: fixture, data: data) == nil)
                let path = (fixture as NSString).deletingLastPathComponent + "/" + file
                try? FileManager.default.removeItem(atPath: path)
                if kind == "directory" {
                    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
                } else {
                    try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: path + ".nowhere")
                }
                let error = try setupError(fixture: fixture, data: data)
                #expect(error?.message.contains(path) == true, "\(kind): \(error?.message ?? "no error")")
                #expect(error?.status == 500, "\(kind)")
                // Missing, it is no error.
                try FileManager.default.removeItem(atPath: path)
                #expect(try setupError(fixture: fixture, data: data) == nil, "\(kind)")
            }
        }
    }

    /// Two declarations with one name stop the service, naming the file, the entry and the name (a second one was
    /// dropped silently).
    @Test func aDuplicateControllerNameIsASetupError() throws {
        try withFixtureCopy { fixture, data in
            let path = fixture + "/controllers.json"
            let declarations =
                #"{"controllers": [{"name": "departments", "kind": "array", "content": "Department"},"#
                + #" {"name": "departments", "kind": "object", "content": "Department"}]}"#
            try Data(declarations.utf8).write(to: URL(fileURLWithPath: path))
            let error = try setupError(fixture: fixture, data: data)
            #expect(error?.code == "bad-controller")
            let message = error?.message ?? ""
            #expect(message.hasPrefix(path + #": controllers[1] "departments": "#), "\(message)")
        }
    }
}
