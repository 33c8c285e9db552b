import Foundation

/// The template language of client definitions (`fixtures/clients/*.json`) and `--client-command`: how a job becomes
/// a command line.
///
/// A template is a list of items. A string is one word, its placeholders (`{url}`, …) replaced. An array is an
/// optional fragment: its words appear only when every placeholder in them has a value (`["--cacert", "{cafile}"]`
/// disappears without a CA). An object `{"for": [SHAPES], "words": [...]}` appears only for jobs of those shapes
/// (`one` file, `several` files, a file `named` by the server); `{"each": [...]}` repeats its items once per
/// transfer, with that transfer's `{url}`, `{output}`, `{output-dir}` and `{output-name}`. Outside `each` they are the
/// first transfer's. A placeholder in a plain word that has no value is replaced by nothing.
public indirect enum ClientTemplate: Hashable, Sendable {
    /// One word.
    case word(String)
    /// Words that appear only when every placeholder in them has a value.
    case optional([ClientTemplate])
    /// Items that appear only for jobs of these shapes (all shapes when nil), repeated per transfer when `each`.
    case group(shapes: Set<Shape>?, each: Bool, items: [ClientTemplate])

    /// What a job asks of the client.
    public enum Shape: String, Hashable, Sendable, CaseIterable {
        /// One file, at a path it is given.
        case one
        /// Several files in one run, each at a path it is given.
        case several
        /// One file in a directory it is given, under the name the server gives (`Content-Disposition`).
        case named

        /// The shape of `job`.
        public init(_ job: ClientJob) {
            self = job.namesFromServer ? .named : job.transfers.count > 1 ? .several : .one
        }
    }

    /// Every placeholder a template may use, with what it stands for.
    public static let placeholders: [String: String] = [
        "url": "the URL",
        "output": "the output file's path",
        "output-dir": "the output's directory",
        "output-name": "the output file's name",
        "state": "a directory kept across the runs of one pair",
        "cafile": "the server's CA file (no value without TLS)",
        "authorization": "the row's Authorization value (no value for rows without one)",
        "retries": "the row's retries, else the definition's default (no value without either)",
        "tries": "retries + 1",
        "connect-timeout": "the connect timeout in whole seconds",
        "idle-timeout": "the idle timeout in whole seconds",
        "concurrency": "the most downloads at once",
        "list-file": "the path of the definition's list file, written before each start",
        "client-dir": "the directory of the definition file (where a library's driver script lives)",
        "build-dir": "the definition's build directory, where its build step made the program",
    ]

    /// The placeholder names in `text`, in order: each `{name}`.
    static func names(in text: String) -> [String] {
        var names: [String] = []
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            names.append(String(rest[rest.index(after: open)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        return names
    }

    /// Every placeholder name the template uses, anywhere in it.
    public var placeholderNames: Set<String> {
        switch self {
        case .word(let text): Set(Self.names(in: text))
        case .optional(let items), .group(_, _, let items): items.reduce(into: []) { $0.formUnion($1.placeholderNames) }
        }
    }

    /// Replaces each placeholder of `text` with its value (nothing where it has none).
    static func fill(_ text: String, _ values: [String: String]) -> String {
        var result = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            result += rest[..<open]
            result += values[String(rest[rest.index(after: open)..<close])] ?? ""
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }

    /// The words of `items` for a job of `shape`.
    ///
    /// - Parameters:
    ///   - items: the template.
    ///   - shape: the job's shape.
    ///   - values: the job's placeholder values (the first transfer's for the per-transfer ones).
    ///   - transfers: each transfer's own values, for `each`.
    /// - Returns: the words.
    static func render(
        _ items: [ClientTemplate], shape: Shape, values: [String: String], transfers: [[String: String]]
    ) -> [String] {
        items.flatMap { $0.render(shape: shape, values: values, transfers: transfers) }
    }

    private func render(shape: Shape, values: [String: String], transfers: [[String: String]]) -> [String] {
        switch self {
        case .word(let text):
            return [Self.fill(text, values)]
        case .optional(let items):
            guard placeholderNames.allSatisfy({ values[$0] != nil }) else { return [] }
            return Self.render(items, shape: shape, values: values, transfers: transfers)
        case .group(let shapes, let each, let items):
            guard shapes?.contains(shape) ?? true else { return [] }
            guard each else { return Self.render(items, shape: shape, values: values, transfers: transfers) }
            return transfers.flatMap { own in
                Self.render(items, shape: shape, values: values.merging(own) { _, new in new }, transfers: [own])
            }
        }
    }

    /// The template as a reader sees it in an invocation line: placeholders as `URL`, `OUTPUT`, `CA`, …, optional
    /// fragments in brackets, for a job of `shape`.
    static func describe(_ items: [ClientTemplate], shape: Shape, symbols: [String: String]) -> [String] {
        items.flatMap { item -> [String] in
            switch item {
            case .word(let text):
                return [ShellQuoting.quoted(fill(text, symbols))]
            case .optional(let inner):
                let words = describe(inner, shape: shape, symbols: symbols)
                return words.isEmpty ? [] : ["[" + words.joined(separator: " ") + "]"]
            case .group(let shapes, let each, let inner):
                guard shapes?.contains(shape) ?? true else { return [] }
                let words = describe(inner, shape: shape, symbols: symbols)
                // Repeated per file only where there are several.
                return each && shape == .several && !words.isEmpty ? [words.joined(separator: " ") + " …"] : words
            }
        }
    }
}
