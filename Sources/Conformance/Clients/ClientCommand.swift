/// A client's command line for one job, as a tester types it: the reproducer's client part.
///
/// The harness starts subprocess clients with exactly this (program, arguments, environment), after writing
/// `files`; the in-process engine column gives the `rangefetch` command that drives the same engine.
public struct ClientCommand: Hashable, Sendable {
    /// The program: a path, or a name looked up on PATH.
    public var program: String
    /// The arguments, without the program.
    public var arguments: [String]
    /// Variables added to the environment (axel's `SSL_CERT_FILE`).
    public var environment: [String: String]
    /// Files the command reads that must exist first (aria2c's input list), contents by path.
    public var files: [String: String]
    /// The exit statuses after which the harness runs it again, one second later (``SubprocessClient/transientExitCodes``).
    public var rerunOn: [Int32]
    /// Whether SIGINT pauses it (it exits, and running it again resumes): how a `pause-at` step is done by hand.
    public var pausesOnInterrupt: Bool
    /// For a column that is not this program (the in-process engine): what the command stands in for; nil when it is
    /// the column's own command.
    public var standsFor: String?
    /// The directory it must run in, when that matters: the output directory of a client that names its output
    /// from the server. Nil: anywhere (every path it is given is absolute).
    public var directory: String?

    /// Makes a command.
    ///
    /// - Parameters:
    ///   - program: the program.
    ///   - arguments: its arguments.
    ///   - environment: variables added to its environment.
    ///   - files: files to write first, by path.
    ///   - rerunOn: the exit statuses the harness runs it again after.
    ///   - pausesOnInterrupt: whether SIGINT pauses it.
    ///   - standsFor: what it stands in for, when it is not the column's own program.
    ///   - directory: the directory it must run in, if any.
    public init(
        program: String, arguments: [String], environment: [String: String] = [:], files: [String: String] = [:],
        rerunOn: [Int32] = [], pausesOnInterrupt: Bool = false, standsFor: String? = nil, directory: String? = nil
    ) {
        self.directory = directory
        self.rerunOn = rerunOn
        self.program = program
        self.arguments = arguments
        self.environment = environment
        self.files = files
        self.pausesOnInterrupt = pausesOnInterrupt
        self.standsFor = standsFor
    }

    /// The command as one shell line: `[cd DIR && ]VAR=value program 'arg' ...`, each word quoted only when it
    /// needs it.
    public var line: String {
        let assignments = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\(ShellQuoting.quoted($0.value))" }
        let command = (assignments + ([program] + arguments).map(ShellQuoting.quoted)).joined(separator: " ")
        return directory.map { "cd \(ShellQuoting.quoted($0)) && \(command)" } ?? command
    }
}
