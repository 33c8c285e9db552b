import ArgumentParser
import Foundation

/// Where the scenario catalogue and the files it serves are: the same for `rangecheck run` and `rangecheck serve`.
///
/// The defaults are the checkout's `fixtures/`; where the current directory has none, an installed catalogue
/// (`scripts/install` copies it to `PREFIX/share/rangecheck/` beside `PREFIX/bin/rangecheck`) is used instead, so an
/// installed `rangecheck` runs from any directory. The client definitions are found beside the scenarios either way.
struct CatalogueOptions: ParsableArguments {
    @Option(name: .customLong("scenarios"), help: "The scenario directory.")
    var scenariosOption = "fixtures/scenarios"

    @Option(name: .customLong("root"), help: "The directory served under /files/.")
    var rootOption = "fixtures/files"

    /// The scenario directory: as given, or the installed one when the default is not here.
    var scenariosDirectory: String {
        Self.resolved(scenariosOption, default: "fixtures/scenarios", installed: "scenarios")
    }

    /// The directory served under `/files/`: as given, or the installed one when the default is not here.
    var root: String { Self.resolved(rootOption, default: "fixtures/files", installed: "files") }

    /// `value`, unless it is the default and missing here while an installed copy exists.
    static func resolved(_ value: String, default defaultValue: String, installed name: String) -> String {
        guard value == defaultValue, !FileManager.default.fileExists(atPath: value),
            let directory = RunMatrix.executableDirectory
        else { return value }
        let share = (directory as NSString).deletingLastPathComponent + "/share/rangecheck/\(name)"
        return FileManager.default.fileExists(atPath: share) ? share : value
    }
}
