import ArgumentParser

/// Where the scenario catalogue and the files it serves are: the same for `rangecheck run` and `rangecheck serve`.
struct CatalogueOptions: ParsableArguments {
    @Option(name: .customLong("scenarios"), help: "The scenario directory.")
    var scenariosDirectory = "fixtures/scenarios"

    @Option(name: .customLong("root"), help: "The directory served under /files/.")
    var root = "fixtures/files"
}
