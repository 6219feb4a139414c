import Foundation
import Halcyon
@testable import HalcyonServer
import HTTPTypes
import Hummingbird
import NIOCore
import Testing

/// Properties of ``ImageRequestPlan`` over generated option sets: options written differently that render alike
/// make one plan and the same answer from a real server; changing any option that changes the answer's bytes
/// or headers changes the plan's key.
@Suite("Request plans: the identity is the cache key")
struct ImageRequestPlanTests {
    /// One option's values, each rendering differently from the others and from the option's absence.
    struct Axis: Sendable {
        /// The ``ProcessingOptions`` properties the option sets.
        let properties: [String]
        let values: [String]
    }

    static let axes: [Axis] = [
        Axis(properties: ["resizeMode", "width", "height"],
             values: ["rs:fit:40:30", "rs:fill:40:30", "rs:force:40:30", "rs:fill-down:40:30", "rs:auto:30:40", "rs:fit:20:0"]),
        Axis(properties: ["minWidth", "minHeight"], values: ["mw:70", "mh:70"]),
        Axis(properties: ["gravity"], values: ["g:no", "g:so:2:3", "g:fp:0.2:0.8", "g:sm"]),
        Axis(properties: ["quality"], values: ["q:40", "q:90"]),
        Axis(properties: ["formatQuality"], values: ["fq:webp:30", "fq:jpg:20:webp:30"]),
        Axis(properties: ["maxBytes"], values: ["mb:600", "mb:900"]),
        Axis(properties: ["format"], values: ["f:png", "f:webp"]),
        Axis(properties: ["blur"], values: ["bl:1", "bl:2.5"]),
        Axis(properties: ["round"], values: ["rd:4", "rd:9"]),
        Axis(properties: ["blackWhite"], values: ["bw"]),
        Axis(properties: ["tint"], values: ["tint:ff0000", "tint:00ff0080"]),
        Axis(properties: ["enlarge"], values: ["el:1"]),
        Axis(properties: ["extend"], values: ["ex:1", "ex:1:no", "ex:1:so:2:2"]),
        Axis(properties: ["extendAspectRatio"], values: ["exar:1", "exar:1:we"]),
        Axis(properties: ["zoomX", "zoomY"], values: ["z:0.5", "z:0.5:0.25"]),
        Axis(properties: ["dpr"], values: ["dpr:2", "dpr:0.5"]),
        Axis(properties: ["filename"], values: ["fn:photo", "fn:other"]),
        Axis(properties: ["attachment"], values: ["att:1"]),
        Axis(properties: ["rotate"], values: ["rot:90", "rot:180", "rot:270"]),
        Axis(properties: ["flipHorizontal", "flipVertical"], values: ["fl:1:0", "fl:0:1", "fl:1:1"]),
        Axis(properties: ["sharpen"], values: ["sh:1", "sh:2"]),
        Axis(properties: ["pixelate"], values: ["pix:3", "pix:6"]),
        Axis(properties: ["padding"], values: ["pd:2", "pd:1:2:3:4"]),
        Axis(properties: ["background"], values: ["bg:ff0000", "bg:0:0:255"]),
        Axis(properties: ["crop"], values: ["c:20:20", "c:0.5:0.5", "c:20:20:no"]),
        Axis(properties: ["trim"], values: ["t:10", "t:10:ffffff", "t:20:ffffff:1:1"]),
        Axis(properties: ["autoRotate"], values: ["ar:0"]),
        Axis(properties: ["stripMetadata"], values: ["sm:0"]),
        Axis(properties: ["keepCopyright"], values: ["kcr:0"]),
        Axis(properties: ["stripColorProfile"], values: ["scp:0"]),
        Axis(properties: ["watermark"], values: ["wm:0.5", "wm:0.5:re", "wm:0.7:no:3:3"]),
        Axis(properties: ["skipProcessing"], values: ["skp:png", "skp:jpg:webp"]),
        Axis(properties: ["raw"], values: ["raw"]),
        Axis(properties: ["cacheBuster"], values: ["cb:1", "cb:2"]),
    ]

    /// Segments that change nothing in the answer, by the axis they belong to; added only when that axis is absent.
    static let noOps: [String: [String]] = [
        "blur": ["bl:0"], "sharpen": ["sh:0"], "round": ["rd:0"], "pixelate": ["pix:1"], "zoomX": ["z:1"], "dpr": ["dpr:1"],
        "gravity": ["g:ce", "g:ce:0:0"], "enlarge": ["el:0"], "attachment": ["att:0"], "stripMetadata": ["sm:1", "sm"],
        "keepCopyright": ["kcr:1"], "stripColorProfile": ["scp:t"], "quality": ["q:0"], "maxBytes": ["mb:0"],
        "watermark": ["wm:0"], "autoRotate": ["ar:1"], "blackWhite": ["bw:0"], "rotate": ["rot:0", "rot:360", "rot:-720"],
        "flipHorizontal": ["fl:0:0"], "raw": ["raw:0"], "background": ["bg:"], "extend": ["ex:0"],
    ]

    /// Long names for the short ones (imgproxy accepts both).
    static let aliases: [String: String] = [
        "rs": "resize", "g": "gravity", "c": "crop", "t": "trim", "ex": "extend", "exar": "extend_ar", "z": "zoom", "el": "enlarge",
        "ar": "auto_rotate", "rot": "rotate", "fl": "flip", "bl": "blur", "sh": "sharpen", "pix": "pixelate", "rd": "round",
        "pd": "padding", "bg": "background", "wm": "watermark", "q": "quality", "fq": "format_quality", "mb": "max_bytes",
        "f": "format", "sm": "strip_metadata", "kcr": "keep_copyright", "scp": "strip_color_profile", "skp": "skip_processing",
        "fn": "filename", "att": "return_attachment", "cb": "cachebuster", "mw": "min-width", "mh": "min-height",
    ]

    /// Other spellings of one value.
    static let rewrites: [String: [String]] = [
        "rs:fill:40:30": ["rt:fill/w:40/h:30", "s:40:30/rt:fill"], "rs:fit:40:30": ["w:40/h:30", "s:40:30"],
        "bg:ff0000": ["bg:255:0:0", "bg:254.7:0.2:0", "bg:FF0000"], "bg:0:0:255": ["bg:0000ff", "bg:00f"],
        "fl:1:0": ["fl:t:f", "fl:true"], "el:1": ["el:true", "el"], "rot:90": ["rot:450", "rot:-270"], "bw": ["bw:1"],
        "skp:jpg:webp": ["skp:webp:jpg", "skp:webp:jpeg:webp"], "fq:jpg:20:webp:30": ["fq:webp:30:jpg:20", "fq:jpeg:20/fq:webp:30"],
        "raw": ["raw:1"], "att:1": ["att:t"], "ar:0": ["ar:false"],
    ]

    /// A random option set over `axes`: each axis absent or one of its values.
    static func optionSet(_ random: inout SeededGenerator, axes: [Axis] = axes) -> [String] {
        axes.compactMap { axis in random.next(below: 3) == 0 ? axis.values[random.next(below: axis.values.count)] : nil }
    }

    /// `segments` written another way: values respelled, long names, no-op segments for absent axes, shuffled.
    static func rewritten(_ segments: [String], _ random: inout SeededGenerator) -> [String] {
        var out: [String] = []
        for segment in segments {
            var text = segment
            if let others = rewrites[text], random.next(below: 2) == 0 { text = others[random.next(below: others.count)] }
            let parts = text.split(separator: "/").map { part -> String in
                let name = String(part.split(separator: ":", maxSplits: 1)[0])
                guard let long = aliases[name], random.next(below: 2) == 0 else { return String(part) }
                return long + part.dropFirst(name.count)
            }
            out += parts
        }
        let present = Set(segments.flatMap { segment in axes.first { $0.values.contains(segment) }?.properties ?? [] })
        for (property, segments) in noOps.sorted(by: { $0.key < $1.key }) where !present.contains(property) && random.next(below: 3) == 0 {
            out.append(segments[random.next(below: segments.count)])
        }
        if random.next(below: 2) == 0 { out.append("exp:\(Int(Date().timeIntervalSince1970) + 3600 + random.next(below: 1000))") }
        return out.shuffled(using: &random)
    }

    // MARK: - Properties

    @Test("Every option is one of the generated axes (a new option must be added here)")
    func axesCoverEveryOption() {
        let covered = Set(Self.axes.flatMap(\.properties)).union(["expires"])
        let fields = Mirror(reflecting: ProcessingOptions()).children.compactMap(\.label)
        #expect(Set(fields).subtracting(covered).isEmpty, "not generated: \(Set(fields).subtracting(covered).sorted())")
        #expect(covered.subtracting(fields).isEmpty, "no such option: \(covered.subtracting(fields).sorted())")
    }

    @Test("Changing any option to another value changes the plan's key", arguments: 0..<40)
    func changedOptionChangesKey(seed: Int) async throws {
        let fixture = try await PlanFixture.shared()
        var random = SeededGenerator(state: UInt64(seed) &+ 1000)
        for _ in 0..<8 {
            let base = Self.optionSet(&random)
            let plan = try fixture.plan(base)
            for (index, axis) in Self.axes.enumerated() {
                let current = base.first { axis.values.contains($0) }
                let choices = ([nil] + axis.values.map(Optional.some)).filter { $0 != current }
                let other = choices[random.next(below: choices.count)]
                var changed = base.filter { !axis.values.contains($0) }
                if let other { changed.append(other) }
                let changedPlan = try fixture.plan(changed)
                #expect(changedPlan.cacheKey != plan.cacheKey,
                        "axis \(index) \(axis.properties): \(base) and \(changed) share a key")
            }
        }
    }

    @Test("Options written differently that render alike make one plan and the same answer", arguments: 0..<24)
    func equalPlansGiveTheSameAnswer(seed: Int) async throws {
        let fixture = try await PlanFixture.shared()
        var random = SeededGenerator(state: UInt64(seed))
        let base = Self.optionSet(&random)
        let other = Self.rewritten(base, &random)
        let plan = try fixture.plan(base)
        #expect(try fixture.plan(other) == plan, "\(base) and \(other) make different plans")
        #expect(try fixture.plan(other).cacheKey == plan.cacheKey)
        let first = try await fixture.answer(base)
        let second = try await fixture.answer(other)
        #expect(first.status == 200, "\(base) → \(first.status) \(first.errorMessage ?? "")")
        #expect(first.status == second.status, "\(base) → \(first.status) but \(other) → \(second.status)")
        #expect(first.body == second.body, "\(base) and \(other) answered different bytes")
        for header in ["content-type", "content-disposition", "vary", "etag", "cache-control"] {
            #expect(first.header(header) == second.header(header), "\(header) differs for \(base) and \(other)")
        }
    }

    @Test("Each server setting that changes an answer changes the plan's key")
    func renderingSettingsChangeKey() throws {
        let base = ImageRequestPlan.Rendering(
            defaultQuality: nil, maxResultSide: 4000, maxFrameCount: 300, onlyFirstFrame: true, strictness: .none, watermark: nil)
        var changes = [base]
        changes.append(.init(defaultQuality: 70, maxResultSide: 4000, maxFrameCount: 300, onlyFirstFrame: true, strictness: .none, watermark: nil))
        changes.append(.init(defaultQuality: nil, maxResultSide: 4001, maxFrameCount: 300, onlyFirstFrame: true, strictness: .none, watermark: nil))
        changes.append(.init(defaultQuality: nil, maxResultSide: 4000, maxFrameCount: 30, onlyFirstFrame: true, strictness: .none, watermark: nil))
        changes.append(.init(defaultQuality: nil, maxResultSide: 4000, maxFrameCount: 300, onlyFirstFrame: false, strictness: .none, watermark: nil))
        changes.append(.init(defaultQuality: nil, maxResultSide: 4000, maxFrameCount: 300, onlyFirstFrame: true, strictness: .error, watermark: nil))
        changes.append(.init(defaultQuality: nil, maxResultSide: 4000, maxFrameCount: 300, onlyFirstFrame: true, strictness: .none, watermark: "a"))
        #expect(Mirror(reflecting: base).children.count == changes.count - 1, "a setting is not changed here")
        let source = Source.network(ImageResource(downloadURL: URL(string: "http://127.0.0.1/a.jpg")!))
        let keys = changes.map { rendering in
            ImageRequestPlan(source: source, options: ProcessingOptions(), explicitFormat: nil, negotiatedFormat: nil, rendering: rendering).cacheKey
        }
        #expect(Set(keys).count == keys.count)
        let otherSource = Source.network(ImageResource(downloadURL: URL(string: "http://127.0.0.1/b.jpg")!))
        let formats: [(ImageFormat?, ImageFormat?)] = [(nil, nil), (.png, nil), (nil, .png), (.webp, nil), (nil, .webp)]
        let formatKeys = formats.map { ImageRequestPlan(source: source, options: ProcessingOptions(), explicitFormat: $0.0, negotiatedFormat: $0.1, rendering: base).cacheKey }
        #expect(Set(formatKeys).count == formats.count, "an explicit and a negotiated format must differ (Vary: Accept)")
        #expect(ImageRequestPlan(source: otherSource, options: ProcessingOptions(), explicitFormat: nil, negotiatedFormat: nil, rendering: base).cacheKey != keys[0])
    }

    @Test("The key is the same in every process: a known plan's key does not depend on hashing seeds")
    func keyIsStableAcrossProcesses() throws {
        var options = ProcessingOptions()
        options.skipProcessing = [.jpeg, .png, .webp]
        options.formatQuality = [.webp: 30, .jpeg: 20, .avif: 40, .png: 9]
        let plan = ImageRequestPlan(
            source: .network(ImageResource(downloadURL: URL(string: "http://127.0.0.1/a.jpg")!)), options: options,
            explicitFormat: nil, negotiatedFormat: .webp,
            rendering: .init(defaultQuality: nil, maxResultSide: 100, maxFrameCount: 1, onlyFirstFrame: true, strictness: .none, watermark: nil))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text = String(decoding: try encoder.encode(plan.identity), as: UTF8.self)
        // Dictionaries keyed by format encode as objects, whose keys are sorted.
        #expect(text.contains(#""formatQuality":{"avif":40,"jpeg":20,"png":9,"webp":30}"#), "\(text)")
        #expect(text.contains(#""skipProcessing":["jpeg","png","webp"]"#), "\(text)")
    }
}
