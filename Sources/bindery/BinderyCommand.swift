import ArgumentParser

/// The `bindery` command line.
@main
struct BinderyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bindery",
        abstract: "Cocoa Bindings as an HTTP service.",
        subcommands: [ServeCommand.self, CheckModelCommand.self],
        defaultSubcommand: ServeCommand.self
    )
}
