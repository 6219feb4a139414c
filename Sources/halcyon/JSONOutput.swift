import Foundation

/// A JSON value, for the tool's `--json` documents.
enum JSONValue: Encodable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case array([JSONValue])
    case object([String: JSONValue])
    case null

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value):
            if value == value.rounded(), abs(value) < 1e15 { try container.encode(Int64(value)) } else { try container.encode(value) }
        case .bool(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }
}

/// Prints JSON documents on standard output, keys sorted, one document per call.
enum JSONOutput {
    static func print(_ object: [String: JSONValue]) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(JSONValue.object(object))
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    static func print(_ object: [String: [[String: JSONValue]]]) throws {
        try print(object.mapValues { JSONValue.array($0.map(JSONValue.object)) })
    }
}
