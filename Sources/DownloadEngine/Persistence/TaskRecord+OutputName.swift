extension TaskRecord {
    /// Names the file of a task named from the response (``outputDirectory``), once: from the `Content-Disposition`
    /// of the first response whose bytes are written, by ``OutputName/choose(contentDisposition:url:)``.
    ///
    /// - Parameters:
    ///   - contentDisposition: That response's `Content-Disposition`, if any.
    ///   - store: The state directory the record's paths are relative to.
    /// - Returns: Whether the name was chosen now (the record changed and must reach the disk before the bytes do).
    mutating func chooseName(contentDisposition: String?, store: StateStore) -> Bool {
        guard let outputDirectory, nameChosen != true else { return false }
        let directory = LexicalPath.absolute(outputDirectory, relativeTo: store.directory)
        let name = OutputName.choose(contentDisposition: contentDisposition, url: url)
        destination = store.relative(directory + "/" + name)
        nameChosen = true
        return true
    }
}
