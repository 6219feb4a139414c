import Foundation
import Halcyon

// MARK: - Parsing

extension ProcessingOptions {
    /// Named option lists (`--preset name=options`) and whether URLs may hold only preset names.
    public struct Presets: Sendable, Hashable {
        /// Each preset's option segments, by name; `default` applies to every request first.
        public var named: [String: [String]] = [:]
        /// `--only-presets`: every URL segment is a preset name.
        public var onlyPresets = false

        /// No presets.
        public init(named: [String: [String]] = [:], onlyPresets: Bool = false) {
            self.named = named
            self.onlyPresets = onlyPresets
        }
    }

    /// Parses option segments; throws naming the first bad or unknown option.
    ///
    /// The `default` preset applies first; `pr:a:b` (or, with
    /// `onlyPresets`, every segment) expands in place. Presets may name
    /// presets, up to 8 deep; an unknown preset is an error.
    public static func parse(_ segments: [String], maxDimension: Int, presets: Presets = Presets()) throws(ParseError) -> ProcessingOptions {
        var options = ProcessingOptions()
        var expanded: [String] = []
        if let base = presets.named["default"] { try expand(base, into: &expanded, presets: presets, depth: 1) }
        if presets.onlyPresets {
            for name in segments where !name.isEmpty { try expand(["pr:\(name)"], into: &expanded, presets: presets, depth: 0) }
        } else {
            try expand(segments, into: &expanded, presets: presets, depth: 0)
        }
        for segment in expanded where !segment.isEmpty {
            try OptionSegment(segment, maxDimension: maxDimension).apply(to: &options)
        }
        let size = options.scaledSize
        guard size.width <= maxDimension, size.height <= maxDimension else {
            throw ParseError(option: options.dpr != 1 ? "dpr" : "z", message: "the size times zoom and pixel ratio, "
                + "\(size.width)x\(size.height), exceeds the limit of \(maxDimension)")
        }
        return options
    }

    /// `segments` with every `pr`/`preset` replaced by its presets' segments.
    private static func expand(_ segments: [String], into out: inout [String], presets: Presets, depth: Int) throws(ParseError) {
        for segment in segments {
            let parts = segment.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard parts[0] == "pr" || parts[0] == "preset" else {
                if presets.onlyPresets && depth == 0 { throw ParseError(option: segment, message: "only presets are allowed") }
                out.append(segment)
                continue
            }
            guard parts.count > 1, depth < 8 else { throw ParseError(option: segment, message: "expected pr:{name}[:{name}...], at most 8 deep") }
            for name in parts.dropFirst() {
                guard let body = presets.named[name] else { throw ParseError(option: segment, message: "unknown preset \"\(name)\"") }
                try expand(body, into: &out, presets: presets, depth: depth + 1)
            }
        }
    }

    /// The format a bare file extension names, if Halcyon can write it.
    ///
    /// `OutputEncodingPolicy.format(forExtension:)` on a single word: `jpg`,
    /// `jpeg`, `jpe`, `png`, `webp`, `avif`, `gif`, `tif`, `tiff`, any case;
    /// text with a dot or a slash is refused.
    public static func outputFormat(extension text: String) -> ImageFormat? {
        guard !text.contains("."), !text.contains("/") else { return nil }
        return OutputEncodingPolicy.default.format(forExtension: text)
    }
}

/// One `name:arg:arg` option segment, split, with the checks its arguments share.
struct OptionSegment {
    typealias ParseError = ProcessingOptions.ParseError
    let segment: String
    let name: String
    let args: [String]
    let maxDimension: Int

    /// Splits `segment` into its name and arguments.
    init(_ segment: String, maxDimension: Int) {
        let parts = segment.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        self.segment = segment
        self.name = parts[0]
        self.args = Array(parts.dropFirst())
        self.maxDimension = maxDimension
    }

    /// The parse error for this segment.
    func fail(_ message: String) -> ParseError { ParseError(option: segment, message: message) }

    /// Throws unless the argument count is in `range`.
    func expect(_ range: ClosedRange<Int>, _ usage: String) throws(ParseError) {
        guard range.contains(args.count) else { throw fail("expected \(usage)") }
    }

    /// A pixel size: a whole number from 0 to `maxDimension`.
    func size(_ text: String) throws(ParseError) -> Int {
        guard let value = Int(text), value >= 0 else { throw fail("size must be a whole number of pixels ≥ 0") }
        guard value <= maxDimension else { throw fail("size \(value) exceeds the limit of \(maxDimension)") }
        return value
    }

    /// A finite number inside `range`.
    func number(_ text: String, _ range: ClosedRange<Double>) throws(ParseError) -> Double {
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw fail("value must be a number in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    /// One boolean argument in imgproxy's forms.
    func bool(_ text: String) throws(ParseError) -> Bool {
        if ["1", "t", "true"].contains(text) { return true }
        if ["0", "f", "false", ""].contains(text) { return false }
        throw fail("expected 1, t, true, 0, f or false")
    }

    /// imgproxy's boolean: none (true), 1/t/true or 0/f/false.
    func flag() throws(ParseError) -> Bool {
        guard args.count <= 1 else { throw fail("expected \(name) or \(name):{1|0}") }
        guard let text = args.first else { return true }
        guard !text.isEmpty else { throw fail("expected 1, t, true, 0, f or false") }
        return try bool(text)
    }

    /// `R:G:B` (0...255 each) or a hex colour, from `args[from...]`.
    func color(from start: Int = 0) throws(ParseError) -> ProcessingColor {
        let rest = Array(args.dropFirst(start))
        if rest.count == 1, let hex = Color(hex: rest[0]) { return ProcessingColor(color: hex, used: 1) }
        guard rest.count >= 3 else { throw fail("expected {R}:{G}:{B} or {hex} colour") }
        // Held as the whole channel values rendering uses, so equal renderings are equal options.
        let parts = try rest.prefix(3).map { text throws(ParseError) in try number(text, 0...255).rounded() }
        return ProcessingColor(color: Color(red: parts[0] / 255, green: parts[1] / 255, blue: parts[2] / 255), used: 3)
    }

    /// A resizing type.
    func mode(_ text: String) throws(ParseError) -> ProcessingOptions.ResizeMode {
        guard let mode = ProcessingOptions.ResizeMode(rawValue: text) else {
            throw fail("resizing type must be fit, fill, fill-down, force or auto")
        }
        return mode
    }

    /// A gravity with its optional offsets (`g:TYPE[:X:Y]`, `g:fp:X:Y`) from `args[start...]`.
    func placement(from start: Int = 0) throws(ParseError) -> ProcessingOptions.Placement {
        let rest = Array(args.dropFirst(start))
        guard let first = rest.first, let type = ProcessingOptions.Gravity(rawValue: first) else {
            throw fail("gravity must be one of ce, no, so, ea, we, noea, nowe, soea, sowe, sm, fp")
        }
        if type == .fp {
            guard rest.count == 3 else { throw fail("expected fp:{x}:{y} with x and y in 0...1") }
            return .init(type: .fp, x: try number(rest[1], 0...1), y: try number(rest[2], 0...1))
        }
        guard rest.count == 1 || rest.count == 3 else { throw fail("expected {gravity}[:{x offset}:{y offset}]") }
        let limit = Double(maxDimension)
        let offset = { (text: String) throws(ParseError) -> Double in text.isEmpty ? 0 : try number(text, -limit...limit) }
        return .init(type: type, x: rest.count == 3 ? try offset(rest[1]) : 0, y: rest.count == 3 ? try offset(rest[2]) : 0)
    }

    /// The file name of `fn:`, plain or URL-safe base64 when the second argument is true; safe characters only.
    func filename() throws(ParseError) -> String {
        var name = args[0].removingPercentEncoding ?? args[0]
        if args.count == 2, ["1", "t", "true"].contains(args[1]) {
            var text = args[0].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while text.count % 4 != 0 { text += "=" }
            guard let data = Data(base64Encoded: text), let decoded = String(data: data, encoding: .utf8) else {
                throw fail("the file name is not URL-safe base64 of UTF-8")
            }
            name = decoded
        }
        guard name.count <= 200, !name.contains(where: { $0.isNewline || $0 == "\"" || $0 == "/" || $0 == "\\" }) else {
            throw fail("the file name must be at most 200 characters without quotes, slashes or line breaks")
        }
        return name
    }
}

/// A colour parsed from option arguments and how many arguments it took.
struct ProcessingColor {
    let color: Color
    let used: Int
}
