/// How the HTML matrix is rendered: the report file (`rangecheck --html`) and the live page differ only here.
public struct HTMLOptions: Sendable {
    /// Where a cell's link to its run's picture leads.
    public enum DetailLink: Hashable, Sendable {
        /// A section of the same page, `#run-SCENARIO-CLIENT`, shown with CSS `:target` (no script): the page is
        /// one self-contained file.
        case inPage
        /// A page of its own at `prefix + SCENARIO + "/" + CLIENT`, each name percent-encoded; the matrix page then
        /// carries no detail sections. The page there is ``Report/detailHTML(_:matrix:)``.
        case page(prefix: String)
    }

    /// When set, the page reloads itself every this many seconds (`<meta http-equiv="refresh">`), for a live page.
    public var refreshSeconds: Int?
    /// Where cells link to; `.inPage` by default.
    public var detailLink: DetailLink = .inPage
    /// Where a detail page's "back to the matrix" link leads; nil for `../`, which from a page at
    /// `prefix + SCENARIO/CLIENT` is the prefix itself.
    public var matrixLink: String?

    /// The options of the report file: no refresh, details in the page.
    public init() {}
}

extension Report {
    /// ``HTMLOptions``, by the name it is used with.
    public typealias HTMLOptions = Conformance.HTMLOptions
}
