/// What makes two requests the same task: the original URL and the absolute destination, or for a task named from
/// the response (``DownloadRequest/namesFromResponse``) its absolute directory followed by `/` (which no file path
/// ends with), since its file's name is not known when it is added.
struct TaskTarget: Hashable {
    var url: String
    var destination: String

    /// The target of a request whose destination is already absolute.
    init(_ request: DownloadRequest, absoluteDestination: String) {
        url = request.url
        destination = request.namesFromResponse ? absoluteDestination + "/" : absoluteDestination
    }

    /// The target of a task's record.
    init(_ record: TaskRecord, store: StateStore) {
        url = record.url
        if let directory = record.outputDirectory {
            destination = LexicalPath.absolute(directory, relativeTo: store.directory) + "/"
        } else {
            destination = store.destinationPath(record)
        }
    }
}
