import Foundation

/// Parses a processor chain written as one string, such as
/// `resize(300x200,fill)|>round(12)|>blur(2)`, into a processor.
///
/// Steps are joined by `|>`; each is a name with optional arguments in
/// parentheses. The grammar (also in the README and `halcyon --help`):
///
/// | step | processor |
/// |---|---|
/// | `resize(WxH[,fit\|fill\|force])` | ``ResizingImageProcessor`` (default `fit`) |
/// | `downsample(WxH)` or `downsample(N)` | ``DownsamplingImageProcessor`` |
/// | `crop(WxH[,center\|top\|bottom\|left\|right\|topleft\|topright\|bottomleft\|bottomright])` | ``CroppingImageProcessor`` |
/// | `round(R[,#color])`, `R` in points or `N%` of the width | ``RoundCornerImageProcessor`` |
/// | `border(W,#color[,R])` | ``BorderImageProcessor`` |
/// | `blur(R)` | ``BlurImageProcessor`` |
/// | `tint(#rrggbbaa)` | ``TintImageProcessor`` |
/// | `overlay(#rrggbb[,F])` | ``OverlayImageProcessor`` |
/// | `bw` | ``BlackWhiteProcessor`` |
/// | `color(b=B,c=C,s=S,ev=E)` (any subset) | ``ColorControlsProcessor`` |
/// | `blend(MODE[,ALPHA[,#color]])` | ``BlendImageProcessor`` |
///
/// A bad chain throws `processorError(.invalidProcessorChain)` with the
/// position of the offending step or argument.
public enum ProcessorChainParser {
    /// The step names the parser knows.
    public static let stepNames = ["resize", "downsample", "crop", "round", "border", "blur", "tint", "overlay", "bw", "color", "blend"]

    /// Parses `chain`; an empty chain gives the default processor.
    public static func parse(_ chain: String) throws(HalcyonError) -> any ImageProcessor {
        let characters = Array(chain)
        var processors: [any ImageProcessor] = []
        var start = 0
        while start <= characters.count {
            let end = nextSeparator(in: characters, from: start) ?? characters.count
            let step = Step(characters: characters, range: start..<end, chain: chain)
            if step.isBlank {
                if characters.isEmpty || characters.allSatisfy(\.isWhitespace) { return DefaultImageProcessor.default }
                throw step.error("empty step")
            }
            processors.append(try step.processor())
            start = end + 2
        }
        guard var result = processors.first else { return DefaultImageProcessor.default }
        for processor in processors.dropFirst() {
            result = result |> processor
        }
        return result
    }

    /// The start of the next `|>` outside parentheses.
    private static func nextSeparator(in characters: [Character], from start: Int) -> Int? {
        var depth = 0
        var index = start
        while index < characters.count {
            switch characters[index] {
            case "(": depth += 1
            case ")": depth -= 1
            case "|" where depth == 0 && index + 1 < characters.count && characters[index + 1] == ">":
                return index
            default: break
            }
            index += 1
        }
        return nil
    }
}

// MARK: - One step

/// One `name(arguments)` step of a chain, with positions for error messages.
private struct Step {
    let chain: String
    let name: String
    let namePosition: Int
    let arguments: [(text: String, position: Int)]
    let hasParentheses: Bool
    let syntaxError: (position: Int, message: String)?

    var isBlank: Bool { name.isEmpty && arguments.isEmpty && syntaxError == nil }

    init(characters: [Character], range: Range<Int>, chain: String) {
        self.chain = chain
        var index = range.lowerBound
        while index < range.upperBound && characters[index].isWhitespace { index += 1 }
        namePosition = index
        var nameText = ""
        while index < range.upperBound && (characters[index].isLetter || characters[index].isNumber) {
            nameText.append(characters[index])
            index += 1
        }
        name = nameText.lowercased()
        var parsed: [(String, Int)] = []
        var problem: (Int, String)?
        var parentheses = false
        while index < range.upperBound && characters[index].isWhitespace { index += 1 }
        if index < range.upperBound {
            if characters[index] == "(" {
                parentheses = true
                guard let close = characters[index..<range.upperBound].lastIndex(of: ")") else {
                    problem = (index, "missing \")\"")
                    self.arguments = []
                    self.hasParentheses = true
                    self.syntaxError = problem
                    return
                }
                if characters[(close + 1)..<range.upperBound].contains(where: { !$0.isWhitespace }) {
                    problem = (close + 1, "unexpected text after \")\"")
                }
                var argumentStart = index + 1
                var cursor = index + 1
                while cursor <= close {
                    if cursor == close || characters[cursor] == "," {
                        let raw = String(characters[argumentStart..<cursor])
                        let trimmed = raw.trimmingCharacters(in: .whitespaces)
                        let leading = raw.prefix { $0.isWhitespace }.count
                        if !(trimmed.isEmpty && cursor == close && parsed.isEmpty) {
                            parsed.append((trimmed, argumentStart + leading))
                        }
                        argumentStart = cursor + 1
                    }
                    cursor += 1
                }
            } else {
                problem = (index, "unexpected \"\(characters[index])\"")
            }
        }
        arguments = parsed
        hasParentheses = parentheses
        syntaxError = problem
    }

    func error(_ message: String, at position: Int? = nil) -> HalcyonError {
        .processorError(reason: .invalidProcessorChain(chain: chain, position: position ?? namePosition, message: message))
    }

    func processor() throws(HalcyonError) -> any ImageProcessor {
        if let syntaxError { throw error(syntaxError.message, at: syntaxError.position) }
        switch name {
        case "resize":
            return try resizeProcessor()
        case "downsample":
            try expectCount(1...1)
            return DownsamplingImageProcessor(size: try sizeArgument(0, allowSingle: true))
        case "crop":
            try expectCount(1...2)
            let size = try sizeArgument(0)
            let anchor = arguments.count > 1 ? try anchorArgument(1) : CGPoint(x: 0.5, y: 0.5)
            return CroppingImageProcessor(size: size, anchor: anchor)
        case "round":
            return try roundCornerProcessor()
        case "border":
            try expectCount(2...3)
            let width = try numberArgument(0, range: 0...10_000)
            let color = try colorArgument(1)
            let radius = arguments.count > 2 ? try numberArgument(2, range: 0...100_000) : 0
            return BorderImageProcessor(border: Border(color: color, lineWidth: width, radius: .point(radius)))
        case "blur":
            try expectCount(1...1)
            return BlurImageProcessor(blurRadius: try numberArgument(0, range: 0...1_000))
        case "tint":
            try expectCount(1...1)
            return TintImageProcessor(tint: try colorArgument(0))
        case "overlay":
            try expectCount(1...2)
            let fraction = arguments.count > 1 ? try numberArgument(1, range: 0...1) : 0.5
            return OverlayImageProcessor(overlay: try colorArgument(0), fraction: fraction)
        case "bw":
            try expectCount(0...0)
            return BlackWhiteProcessor()
        case "color":
            return try colorControls()
        case "blend":
            return try blendProcessor()
        case "":
            throw error("expected a step name")
        default:
            throw error("unknown step \"\(name)\" (known: \(ProcessorChainParser.stepNames.joined(separator: ", ")))")
        }
    }

    /// The `resize(WxH[,fit|fill|force])` step.
    private func resizeProcessor() throws(HalcyonError) -> any ImageProcessor {
        try expectCount(1...2)
        let size = try sizeArgument(0)
        let mode: ContentMode
        switch arguments.count > 1 ? arguments[1].text.lowercased() : "fit" {
        case "fit": mode = .aspectFit
        case "fill": mode = .aspectFill
        case "force", "none": mode = .none
        default: throw error("resize mode must be fit, fill or force", at: arguments[1].position)
        }
        return ResizingImageProcessor(referenceSize: size, mode: mode)
    }

    /// The `round(R[,#color])` step, `R` in points or `N%` of the width.
    private func roundCornerProcessor() throws(HalcyonError) -> any ImageProcessor {
        try expectCount(1...2)
        let radiusText = arguments[0].text
        let radius: CornerRadius
        if radiusText.hasSuffix("%") {
            radius = .widthFraction(try number(String(radiusText.dropLast()), at: arguments[0].position, range: 0...100) / 100)
        } else {
            radius = .point(try numberArgument(0, range: 0...100_000))
        }
        let background = arguments.count > 1 ? try colorArgument(1) : nil
        return RoundCornerImageProcessor(radius: radius, backgroundColor: background)
    }

    /// The `blend(MODE[,ALPHA[,#color]])` step.
    private func blendProcessor() throws(HalcyonError) -> any ImageProcessor {
        try expectCount(1...3)
        guard let mode = BlendMode.allCases.first(where: { $0.rawValue.lowercased() == arguments[0].text.lowercased() }) else {
            throw error("unknown blend mode \"\(arguments[0].text)\"", at: arguments[0].position)
        }
        let alpha = arguments.count > 1 ? try numberArgument(1, range: 0...1) : 1
        let background = arguments.count > 2 ? try colorArgument(2) : nil
        return BlendImageProcessor(blendMode: mode, alpha: alpha, backgroundColor: background)
    }

    // MARK: Arguments

    private func expectCount(_ range: ClosedRange<Int>) throws(HalcyonError) {
        guard range.contains(arguments.count) else {
            let wanted = range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)"
            throw error("\(name) takes \(wanted) argument\(range.upperBound == 1 ? "" : "s"), got \(arguments.count)")
        }
    }

    private func number(_ text: String, at position: Int, range: ClosedRange<CGFloat>) throws(HalcyonError) -> CGFloat {
        guard let value = Double(text), value.isFinite else { throw error("\"\(text)\" is not a number", at: position) }
        guard range.contains(CGFloat(value)) else {
            throw error("\(text) is outside \(ProcessorIdentifier.number(range.lowerBound))...\(ProcessorIdentifier.number(range.upperBound))", at: position)
        }
        return CGFloat(value)
    }

    private func numberArgument(_ index: Int, range: ClosedRange<CGFloat>) throws(HalcyonError) -> CGFloat {
        try number(arguments[index].text, at: arguments[index].position, range: range)
    }

    private func sizeArgument(_ index: Int, allowSingle: Bool = false) throws(HalcyonError) -> CGSize {
        let (text, position) = arguments[index]
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        if parts.count == 1 && allowSingle {
            let side = try number(String(parts[0]), at: position, range: 1...100_000)
            return CGSize(width: side, height: side)
        }
        guard parts.count == 2 else { throw error("expected a size like 300x200, got \"\(text)\"", at: position) }
        let width = try number(String(parts[0]), at: position, range: 1...100_000)
        let height = try number(String(parts[1]), at: position, range: 1...100_000)
        return CGSize(width: width, height: height)
    }

    private func colorArgument(_ index: Int) throws(HalcyonError) -> Color {
        let (text, position) = arguments[index]
        guard let color = Color(hex: text) else { throw error("\"\(text)\" is not a colour like #rrggbb or #rrggbbaa", at: position) }
        return color
    }

    private func anchorArgument(_ index: Int) throws(HalcyonError) -> CGPoint {
        let anchors: [String: CGPoint] = [
            "center": CGPoint(x: 0.5, y: 0.5), "centre": CGPoint(x: 0.5, y: 0.5),
            "top": CGPoint(x: 0.5, y: 0), "bottom": CGPoint(x: 0.5, y: 1),
            "left": CGPoint(x: 0, y: 0.5), "right": CGPoint(x: 1, y: 0.5),
            "topleft": CGPoint(x: 0, y: 0), "topright": CGPoint(x: 1, y: 0),
            "bottomleft": CGPoint(x: 0, y: 1), "bottomright": CGPoint(x: 1, y: 1),
        ]
        guard let anchor = anchors[arguments[index].text.lowercased()] else {
            throw error("unknown anchor \"\(arguments[index].text)\"", at: arguments[index].position)
        }
        return anchor
    }

    private func colorControls() throws(HalcyonError) -> any ImageProcessor {
        guard !arguments.isEmpty else { throw error("color takes b=, c=, s= or ev= arguments") }
        var values: [String: CGFloat] = ["b": 0, "c": 1, "s": 1, "ev": 0]
        for (text, position) in arguments {
            let pair = text.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, values[pair[0].lowercased()] != nil else {
                throw error("expected b=, c=, s= or ev=, got \"\(text)\"", at: position)
            }
            values[pair[0].lowercased()] = try number(pair[1], at: position, range: -100...100)
        }
        return ColorControlsProcessor(brightness: values["b"] ?? 0, contrast: values["c"] ?? 1,
                                      saturation: values["s"] ?? 1, inputEV: values["ev"] ?? 0)
    }
}
