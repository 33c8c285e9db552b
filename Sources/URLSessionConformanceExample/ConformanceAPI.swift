import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `/_conformance/` endpoints of a `rangecheck serve`, as JSON over URLSession.
struct ConformanceAPI {
    /// A failed request: the server could not be reached, or it answered with an error.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let server: URL
    let token: String?
    let session: URLSession

    /// The scenarios the server judges.
    func scenarios() async throws -> [ScenarioList.Scenario] {
        try await send("GET", "_conformance/scenarios", body: nil as RunRequest?, answer: ScenarioList.self).scenarios
    }

    /// Starts a run of `scenario`: the URLs to download and the steps to perform.
    func startRun(_ request: RunRequest) async throws -> Run {
        try await send("POST", "_conformance/runs", body: request, answer: Run.self)
    }

    /// Reports what the run did and left on disk; returns the verdict.
    func finish(_ run: String, _ result: RunResult) async throws -> Verdict {
        try await send("POST", "_conformance/runs/\(run)/result", body: result, answer: Verdict.self)
    }

    private func send<Body: Encodable, Answer: Decodable>(
        _ method: String, _ path: String, body: Body?, answer: Answer.Type
    ) async throws -> Answer {
        var request = URLRequest(url: server.appendingPathComponent(path))
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpBody = try JSONEncoder().encode(body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw Failure(description: "cannot reach \(server.absoluteString): \(error.localizedDescription)")
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard (200..<300).contains(status) else {
            let message = (try? JSONDecoder().decode(ErrorAnswer.self, from: data))?.error ?? "no error message"
            throw Failure(description: "\(method) /\(path): HTTP \(status): \(message)")
        }
        do {
            return try JSONDecoder().decode(Answer.self, from: data)
        } catch {
            throw Failure(description: "\(method) /\(path): unexpected answer: \(error)")
        }
    }
}
