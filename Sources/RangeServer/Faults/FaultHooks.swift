#if !FAULT_SYNTAX_ONLY
// The fuzz targets (fuzz/build) compile the fault syntax alone: the descriptors, the parser, the merge. The stages act
// on the whole server's types (the request, the representation, the plan), so there they are left out.
import HTTPVocabulary

/// What a fault key does to a response, as hooks at fixed stages of the response path, declared in the key's own
/// file beside its descriptor (`Faults/Keys/`).
///
/// `Router.respond` makes the RFC 9110 decision; the keys set in the request's plan act around it, stage by stage in
/// the order below, and within a stage by `rank` (then by `FaultKey.all`). A plan with no fault visits no hook.
///
/// 1. ``representation``: change the representation before anything is decided from it (`lm-collide`, `encoding`,
///    the validator keys); may answer instead (a 400 naming the key).
/// 2. ``answer``: refuse or replace the answer (`connection-cap`, `reject-header`, `status`, `head`, `html-page`).
/// 3. ``decision``: change what the decision is told (`ignore-range`, `ignore-if-range`, `if-range`, and
///    `encoding=gzip-ignores-range`).
/// 4. ``outcome``: change the decision's outcome (`unsolicited-206`, `misalign-range`, `range-cap`, `multipart`).
/// 5. ``headers``: edit the planned answer's header fields, and a 416's body (`no-accept-ranges`, `content-range*`,
///    `416-shape`, `encoding`, `content-type`, `content-disposition`, `header`). Keys with ``headersOnEveryAnswer``
///    edit a stage-2 answer too; the others only the representation's own answer.
/// 6. The body faults (`FaultKey.bodyFault`, in `BodyFault.precedence` order) and ``body`` (the faults that make
///    HEAD disagree with GET).
///
/// A `Repr-Digest` the client asked for is added after stage 5, as the last field.
struct FaultHooks: Sendable {
    /// Stage 1: changes the representation; throws the answer to send instead.
    var representation: (@Sendable (inout Representation, inout FaultExchange) throws(ResponsePlanFailure) -> Void)?
    /// Stage 2: the answer that replaces the representation's, or nil to go on.
    var answer: (@Sendable (inout FaultExchange) -> ResponsePlan?)?
    /// Stage 3: changes the options of the RFC 9110 decision.
    var decision: (@Sendable (inout DecisionOptions, FaultExchange) -> Void)?
    /// Stage 4: changes the decision's outcome for this representation and request.
    var outcome: (@Sendable (inout RequestDecision.Outcome, Representation, ConditionalRequest, FaultExchange) -> Void)?
    /// Stage 5: edits the planned answer.
    var headers: (@Sendable (inout ResponsePlan, Representation?, FaultExchange) -> Void)?
    /// Whether ``headers`` also edits an answer stage 2 made (`content-type`, `content-disposition`, `header`).
    var headersOnEveryAnswer = false
    /// Stage 6: edits the planned answer after its delivery is set.
    var body: (@Sendable (inout ResponsePlan, FaultExchange) -> Void)?
    /// The order within a stage: lower first; equal ranks keep `FaultKey.all`'s order.
    var rank = 0

    init(
        rank: Int = 0,
        representation: (
            @Sendable (inout Representation, inout FaultExchange) throws(ResponsePlanFailure) -> Void
        )? = nil,
        answer: (@Sendable (inout FaultExchange) -> ResponsePlan?)? = nil,
        decision: (@Sendable (inout DecisionOptions, FaultExchange) -> Void)? = nil,
        outcome: (
            @Sendable (inout RequestDecision.Outcome, Representation, ConditionalRequest, FaultExchange) -> Void
        )? = nil,
        headers: (@Sendable (inout ResponsePlan, Representation?, FaultExchange) -> Void)? = nil,
        headersOnEveryAnswer: Bool = false,
        body: (@Sendable (inout ResponsePlan, FaultExchange) -> Void)? = nil
    ) {
        self.rank = rank
        self.representation = representation
        self.answer = answer
        self.decision = decision
        self.outcome = outcome
        self.headers = headers
        self.headersOnEveryAnswer = headersOnEveryAnswer
        self.body = body
    }
}

/// What the faults of one exchange share while the router plans it: the request, the plan and its applied names, the
/// server state faults need (`FaultContext`), and what earlier stages left for later ones.
struct FaultExchange {
    /// The request being answered.
    let request: IncomingRequest
    /// The request's effective fault plan.
    let faults: FaultPlan
    /// `faults.appliedNames`, computed once.
    let names: [String]
    /// The counters, caches and clocks.
    let context: FaultContext
    /// The `connection-cap` slot this answer holds, given back when it ends.
    var capSlot: String?
    /// Whether `encoding` served the gzip encoding.
    var encoded = false
    /// Whether the decision must ignore Range (`encoding=gzip-ignores-range` served gzip).
    var ignoresRange = false
}

/// The server state that faults read and change, handed to the hooks instead of reached as globals.
struct FaultContext: Sendable {
    /// The responses in progress per client and URL (`connection-cap`).
    let connectionCaps: ConnectionCapCounter
    /// The gzip encodings `encoding` serves.
    let gzipped: GzipEncoding
    /// The wall clock in seconds since 1970, for the dates faults write (`Retry-After`).
    let wallClock: @Sendable () -> Int64
}

extension FaultKey {
    /// Returns this key with `hooks`, for the declaration in the key's file.
    func hooked(_ hooks: FaultHooks) -> FaultKey {
        var key = self
        key.hooks = hooks
        return key
    }

    /// The keys with a hook at a stage, in stage order.
    private static func staged(_ has: (FaultHooks) -> Bool) -> [FaultKey] {
        all.enumerated().filter { has($0.element.hooks) }
            .sorted { ($0.element.hooks.rank, $0.offset) < ($1.element.hooks.rank, $1.offset) }
            .map(\.element)
    }

    /// Stage 1's keys.
    static let representationStage = staged { $0.representation != nil }
    /// Stage 2's keys.
    static let answerStage = staged { $0.answer != nil }
    /// Stage 3's keys.
    static let decisionStage = staged { $0.decision != nil }
    /// Stage 4's keys.
    static let outcomeStage = staged { $0.outcome != nil }
    /// Stage 5's keys.
    static let headerStage = staged { $0.headers != nil }
    /// Stage 6's keys with a ``FaultHooks/body`` hook.
    static let bodyStage = staged { $0.body != nil }
}
#endif
