import Foundation

/// Checks a JSON value against the part of JSON Schema that docs/conformance-api.json uses: `$ref` into the
/// document, `type`, `properties`, `required`, `additionalProperties: false`, `items`, `enum`, `const`, `pattern`,
/// `minLength` and `maxLength` (in code points), `minimum`, `maximum`, `anyOf` and `not`.
///
/// Written for the API document test: a keyword the document starts using that this does not know is reported as a
/// problem, so the check cannot silently pass over it.
struct JSONSchemaCheck {
    /// The whole OpenAPI document, for `$ref`.
    let document: [String: Any]

    private static let known: Set<String> = [
        "$ref", "type", "properties", "required", "additionalProperties", "items", "enum", "pattern", "minimum",
        "description", "default", "contentEncoding", "minLength", "maxLength", "maximum", "anyOf", "not", "const",
    ]

    /// Every way `value` breaks `schema`, as `path: problem`; empty when it conforms.
    func problems(_ value: Any, _ schema: [String: Any], at path: String = "$") -> [String] {
        if let reference = schema["$ref"] as? String {
            guard let resolved = resolve(reference) else { return ["\(path): unresolvable $ref \(reference)"] }
            return problems(value, resolved, at: path)
        }
        var found: [String] = []
        for key in schema.keys where !Self.known.contains(key) { found.append("\(path): unknown keyword \(key)") }
        if let type = schema["type"] as? String, !Self.value(value, isOf: type) {
            return found + ["\(path): expected \(type), found \(Swift.type(of: value))"]
        }
        if let options = schema["enum"] as? [Any] {
            if !options.contains(where: { ($0 as? NSObject)?.isEqual(value) == true }) {
                found.append("\(path): \(value) is not one of \(options)")
            }
        }
        if let pattern = schema["pattern"] as? String, let text = value as? String,
            text.range(of: pattern, options: .regularExpression) == nil
        {
            found.append("\(path): '\(text)' does not match \(pattern)")
        }
        if let minimum = schema["minimum"] as? Double, let number = value as? Double, number < minimum {
            found.append("\(path): \(number) is below \(minimum)")
        }
        if let maximum = (schema["maximum"] as? NSNumber)?.uint64Value, let number = value as? NSNumber,
            number.doubleValue > Double(maximum)
        {
            found.append("\(path): \(number) is above \(maximum)")
        }
        if let constant = schema["const"], !((constant as? NSObject)?.isEqual(value) ?? false) {
            found.append("\(path): \(value) is not \(constant)")
        }
        if let text = value as? String {
            let length = text.unicodeScalars.count
            if let minimum = schema["minLength"] as? Int, length < minimum {
                found.append("\(path): \(length) characters, fewer than \(minimum)")
            }
            if let maximum = schema["maxLength"] as? Int, length > maximum {
                found.append("\(path): \(length) characters, more than \(maximum)")
            }
        }
        if let options = schema["anyOf"] as? [[String: Any]],
            !options.contains(where: { problems(value, $0, at: path).isEmpty })
        {
            found.append("\(path): matches none of anyOf")
        }
        if let excluded = schema["not"] as? [String: Any], problems(value, excluded, at: path).isEmpty {
            found.append("\(path): matches what `not` excludes")
        }
        if let object = value as? [String: Any] {
            let properties = schema["properties"] as? [String: Any] ?? [:]
            for name in schema["required"] as? [String] ?? [] where object[name] == nil {
                found.append("\(path): missing required \(name)")
            }
            for (name, member) in object {
                if let property = properties[name] as? [String: Any] {
                    found += problems(member, property, at: "\(path).\(name)")
                } else if schema["additionalProperties"] as? Bool == false {
                    found.append("\(path): undocumented property \(name)")
                }
            }
        }
        if let array = value as? [Any], let items = schema["items"] as? [String: Any] {
            for (index, item) in array.enumerated() { found += problems(item, items, at: "\(path)[\(index)]") }
        }
        return found
    }

    /// `#/components/...` in the document.
    func resolve(_ reference: String) -> [String: Any]? {
        guard reference.hasPrefix("#/") else { return nil }
        var node: Any = document
        for part in reference.dropFirst(2).split(separator: "/") {
            guard let next = (node as? [String: Any])?[String(part)] else { return nil }
            node = next
        }
        return node as? [String: Any]
    }

    private static func value(_ value: Any, isOf type: String) -> Bool {
        let number = value as? NSNumber
        // JSONSerialization gives booleans as NSNumber too; tell them apart by their Objective-C type.
        let isBoolean = number.map { String(cString: $0.objCType) == "c" } ?? false
        switch type {
        case "object": return value is [String: Any]
        case "array": return value is [Any]
        case "string": return value is String
        case "boolean": return isBoolean
        case "integer": return number != nil && !isBoolean && number!.doubleValue.rounded() == number!.doubleValue
        case "number": return number != nil && !isBoolean
        default: return false
        }
    }
}
