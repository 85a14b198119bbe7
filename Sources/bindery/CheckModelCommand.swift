import ArgumentParser
import Foundation
import ObjectGraph

/// `bindery check-model FILE`: checks a model file as `serve` would, and says what is wrong.
struct CheckModelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-model", abstract: "Check a model.json file; exit non-zero naming file, entity and key.")

    @Argument(help: "The model file.")
    var file: String

    func run() throws {
        do {
            let model = try ObjectModel.check(file: file)
            print(
                "\(file): ok (\(model.entities.count) entities: \(model.entities.map(\.name).joined(separator: ", ")))")
        } catch {
            FileHandle.standardError.write(Data("\(error.message)\n".utf8))
            throw ExitCode.failure
        }
    }
}
