import ArgumentParser

/// `rangecheck`: the conformance matrix of downloaders (`run`, the default) and the conformance service (`serve`).
@main
struct RangeCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rangecheck",
        abstract: "Judge download clients against the scenario catalogue.",
        discussion: """
            `rangecheck [run] ...` runs every scenario against clients it can start here and prints the matrix \
            (`rangecheck run --help`). `rangecheck serve ...` judges clients anywhere: they ask it for a run, \
            download the URLs it hands out, and report what they got (`rangecheck serve --help`, \
            docs/conformance.md). `rangecheck results ...` keeps the public results table in docs/results \
            (`rangecheck results --help`, scripts/results).
            """,
        subcommands: [RunMatrix.self, Serve.self, Results.self],
        defaultSubcommand: RunMatrix.self
    )
}
