import Testing

@testable import DownloadEngine

@Suite("Content-Disposition file names")
struct ContentDispositionTests {
    @Test(
        "the file name of a Content-Disposition value",
        arguments: [
            // Tokens and quoted strings.
            ("attachment; filename=report.pdf", "report.pdf"),
            ("attachment; filename=\"report 2.pdf\"", "report 2.pdf"),
            ("attachment;filename=\"a;b.txt\"", "a;b.txt"),
            ("inline; FILENAME = \"Upper.TXT\" ", "Upper.TXT"),
            // Backslash escapes in a quoted string.
            (#"attachment; filename="say \"hi\".txt""#, #"say "hi".txt"#),
            (#"attachment; filename="back\\slash.txt""#, #"back\slash.txt"#),
            // filename* with UTF-8 percent-decoding, charset and language case-insensitive.
            ("attachment; filename*=UTF-8''%e2%82%ac%20rates.txt", "€ rates.txt"),
            ("attachment; filename*=utf-8'en'caf%C3%A9.txt", "café.txt"),
            ("attachment; filename*=ISO-8859-1''%E9t%E9.txt", "été.txt"),
            // Both present: filename* wins, in either order.
            ("attachment; filename=\"fallback.txt\"; filename*=UTF-8''%C3%A9.txt", "é.txt"),
            ("attachment; filename*=UTF-8''%C3%A9.txt; filename=\"fallback.txt\"", "é.txt"),
            // A filename* that does not decode leaves filename.
            ("attachment; filename=\"fallback.txt\"; filename*=UTF-8''%C3.txt", "fallback.txt"),
            ("attachment; filename=\"fallback.txt\"; filename*=KOI8-R''%C1.txt", "fallback.txt"),
            ("attachment; filename=\"fallback.txt\"; filename*=UTF-8''%ZZ.txt", "fallback.txt"),
            ("attachment; filename=\"fallback.txt\"; filename*=no-quotes.txt", "fallback.txt"),
            // The first of a repeated parameter counts; other parameters are skipped.
            ("attachment; filename=first.txt; filename=second.txt", "first.txt"),
            ("attachment; size=12; creation-date=\"x; y\"; filename=z.txt", "z.txt"),
            // No disposition type: the parameter still counts.
            ("filename=bare.txt", "bare.txt"),
            // Raw UTF-8 and percent signs in filename are taken as they are.
            ("attachment; filename=\"naïve.txt\"", "naïve.txt"),
            ("attachment; filename=\"100%25.txt\"", "100%25.txt"),
            // Directories are left for the sanitiser.
            ("attachment; filename=\"../../etc/passwd\"", "../../etc/passwd"),
        ])
    func filename(value: String, expected: String) {
        #expect(ContentDisposition.filename(value) == expected)
    }

    @Test(
        "values that name no file",
        arguments: [
            "", "attachment", "inline;", "attachment; filename=", "attachment; filename=\"\"", "attachment; filename",
            "attachment; filename=\"never closed", "attachment; name=\"field\"", ";;;", "attachment; filename*=UTF-8''",
            "\u{0}\u{1}garbage", "attachment; filename*=UTF-8''%C3",
        ])
    func noFilename(value: String) {
        #expect(ContentDisposition.filename(value) == nil)
    }

    @Test("a parameter that never closes its quote ends the parse; the ones before it count")
    func unterminatedQuote() {
        #expect(ContentDisposition.filename("attachment; filename=a.txt; filename*=\"UTF-8''b.txt") == "a.txt")
    }

    @Test(
        "one name inside the directory, never a path",
        arguments: [
            ("report.pdf", "report.pdf"),
            ("../../etc/passwd", "passwd"),
            ("/etc/passwd", "passwd"),
            (#"C:\Windows\evil.exe"#, "evil.exe"),
            ("dir/", nil),
            ("..", nil),
            (".", nil),
            ("...", nil),
            (".hidden", "hidden"),
            (". .profile", "profile"),
            ("  spaced name.txt  ", "spaced name.txt"),
            ("line\nbreak\r.txt", "line_break_.txt"),
            ("bell\u{7}\u{0}\u{9B}.txt", "bell___.txt"),
            ("été.txt", "été.txt"),
            ("", nil),
            ("   ", nil),
        ] as [(String, String?)])
    func sanitised(name: String, expected: String?) {
        #expect(OutputName.sanitised(name) == expected)
    }

    @Test("a long name is cut to 255 bytes at a character boundary, keeping its extension")
    func longName() throws {
        let name = try #require(OutputName.sanitised(String(repeating: "é", count: 200) + ".tar.gz"))
        #expect(name.utf8.count <= 255)
        #expect(name.hasSuffix("é.gz"))
        let noExtension = try #require(OutputName.sanitised(String(repeating: "x", count: 300)))
        #expect(noExtension == String(repeating: "x", count: 255))
    }

    @Test("the name chosen: Content-Disposition, else the URL's last segment, else 'download'")
    func choose() {
        let url = "http://127.0.0.1:1/files/a%20b.bin?x=1"
        #expect(OutputName.choose(contentDisposition: "attachment; filename=\"r.pdf\"", url: url) == "r.pdf")
        #expect(OutputName.choose(contentDisposition: "attachment; filename=\"..\"", url: url) == "a b.bin")
        #expect(OutputName.choose(contentDisposition: nil, url: url) == "a b.bin")
        #expect(OutputName.choose(contentDisposition: "inline", url: "http://127.0.0.1:1/") == "download")
        #expect(OutputName.choose(contentDisposition: nil, url: "http://127.0.0.1:1/dir/..%2F.hidden") == "hidden")
    }
}
