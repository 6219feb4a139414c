import Foundation
import Halcyon

// MARK: - What each option sets

extension OptionSegment {
    /// Sets the option this segment names on `options`; throws for a bad or unknown option.
    func apply(to options: inout ProcessingOptions) throws(ParseError) {
        switch name {
        case "rs", "resize":
            try expect(1...5, "rs:{fit|fill|fill-down|force|auto}:{w}:{h}:{enlarge}:{extend}")
            options.resizeMode = try mode(args[0])
            if args.count > 1, !args[1].isEmpty { options.width = try size(args[1]) }
            if args.count > 2, !args[2].isEmpty { options.height = try size(args[2]) }
            if args.count > 3 { options.enlarge = try bool(args[3]) }
            if args.count > 4 { options.extend = try bool(args[4]) ? ProcessingOptions.Placement() : nil }
        case "s", "size":
            try expect(1...4, "s:{w}:{h}:{enlarge}:{extend}")
            if !args[0].isEmpty { options.width = try size(args[0]) }
            if args.count > 1, !args[1].isEmpty { options.height = try size(args[1]) }
            if args.count > 2 { options.enlarge = try bool(args[2]) }
            if args.count > 3 { options.extend = try bool(args[3]) ? ProcessingOptions.Placement() : nil }
        case "rt", "resizing_type":
            try expect(1...1, "rt:{fit|fill|fill-down|force|auto}")
            options.resizeMode = try mode(args[0])
        case "w", "width":
            try expect(1...1, "w:{width}")
            options.width = try size(args[0])
        case "h", "height":
            try expect(1...1, "h:{height}")
            options.height = try size(args[0])
        case "mw", "min-width", "min_width":
            try expect(1...1, "mw:{width}")
            options.minWidth = try size(args[0])
        case "mh", "min-height", "min_height":
            try expect(1...1, "mh:{height}")
            options.minHeight = try size(args[0])
        case "g", "gravity":
            options.gravity = try placement()
        default:
            try applyGeometry(to: &options)
        }
    }

    /// Crop, trim, extension, zoom, pixel ratio, turns and mirrors.
    private func applyGeometry(to options: inout ProcessingOptions) throws(ParseError) {
        switch name {
        case "c", "crop":
            try expect(2...5, "c:{width}:{height}[:{gravity}[:{x}:{y}]]")
            let side = { (text: String) throws(ParseError) -> Double in text.isEmpty ? 0 : try number(text, 0...Double(maxDimension)) }
            options.crop = .init(width: try side(args[0]), height: try side(args[1]), placement: args.count > 2 ? try placement(from: 2) : nil)
        case "t", "trim":
            try expect(1...6, "t:{threshold}[:{colour}[:{equal horizontal}[:{equal vertical}]]]")
            let color = args.count > 1 && !args[1].isEmpty ? Color(hex: args[1]) : nil
            if args.count > 1, !args[1].isEmpty, color == nil { throw fail("the trim colour must be hex") }
            options.trim = .init(threshold: try number(args[0], 0...255), color: color,
                                 equalHorizontal: args.count > 2 ? try bool(args[2]) : false,
                                 equalVertical: args.count > 3 ? try bool(args[3]) : false)
        case "ex", "extend":
            try expect(0...4, "ex:{1|0}[:{gravity}[:{x}:{y}]]")
            options.extend = try extendPlacement()
        case "exar", "extend_aspect_ratio", "extend_ar":
            try expect(0...4, "exar:{1|0}[:{gravity}[:{x}:{y}]]")
            options.extendAspectRatio = try extendPlacement()
        case "z", "zoom":
            try expect(1...2, "z:{factor} or z:{x factor}:{y factor}")
            options.zoomX = try number(args[0], 0.0001...1000)
            options.zoomY = args.count > 1 ? try number(args[1], 0.0001...1000) : options.zoomX
        case "dpr":
            try expect(1...1, "dpr:{ratio}")
            options.dpr = try number(args[0], 0.0001...8)
        case "el", "enlarge":
            options.enlarge = try flag()
        case "ar", "auto_rotate":
            options.autoRotate = try flag()
        case "rot", "rotate":
            guard args.count == 1, let degrees = Int(args[0]), degrees % 90 == 0 else { throw fail("expected rot:{multiple of 90}") }
            options.rotate = degrees
        case "fl", "flip":
            try expect(1...2, "fl:{horizontal}:{vertical}")
            options.flipHorizontal = try bool(args[0])
            options.flipVertical = args.count > 1 ? try bool(args[1]) : false
        default:
            try applyEffect(to: &options)
        }
    }

    /// Filters, padding, background and watermark.
    private func applyEffect(to options: inout ProcessingOptions) throws(ParseError) {
        switch name {
        case "bl", "blur":
            try expect(1...1, "bl:{sigma}")
            options.blur = try number(args[0], 0...100)
        case "sh", "sharpen":
            try expect(1...1, "sh:{sigma}")
            options.sharpen = try number(args[0], 0...100)
        case "pix", "pixelate":
            try expect(1...1, "pix:{size}")
            options.pixelate = try size(args[0])
        case "rd", "round":
            try expect(1...1, "rd:{radius}")
            options.round = try number(args[0], 0...Double(maxDimension))
        case "bw":
            options.blackWhite = try flag()
        case "tint":
            guard args.count == 1, let color = Color(hex: args[0]) else { throw fail("expected tint:{hex colour}") }
            options.tint = color
        case "pd", "padding":
            try expect(1...4, "pd:{top}[:{right}[:{bottom}[:{left}]]]")
            let sides = try args.map { text throws(ParseError) in text.isEmpty ? 0 : try size(text) }
            let right = sides.count > 1 ? sides[1] : sides[0]
            options.padding = .init(top: sides[0], right: right, bottom: sides.count > 2 ? sides[2] : sides[0],
                                    left: sides.count > 3 ? sides[3] : right)
        case "bg", "background":
            // No arguments: no background (imgproxy's way to turn a preset's off).
            guard !args.isEmpty, args != [""] else { options.background = nil; return }
            let parsed = try color()
            guard parsed.used == args.count else { throw fail("expected bg:{R}:{G}:{B} or bg:{hex}") }
            options.background = parsed.color
        case "wm", "watermark":
            options.watermark = try watermark()
        default:
            try applyOutput(to: &options)
        }
    }

    /// Quality, format, size cap, metadata, delivery and pass-through.
    private func applyOutput(to options: inout ProcessingOptions) throws(ParseError) {
        switch name {
        case "q", "quality":
            guard args.count == 1, let value = Int(args[0]), (0...100).contains(value) else { throw fail("quality must be 0...100") }
            options.quality = value == 0 ? nil : value
        case "fq", "format_quality":
            guard !args.isEmpty, args.count % 2 == 0 else { throw fail("expected fq:{format}:{quality}[:{format}:{quality}...]") }
            for index in stride(from: 0, to: args.count, by: 2) {
                guard let format = ProcessingOptions.outputFormat(extension: args[index]), let value = Int(args[index + 1]),
                      (1...100).contains(value) else { throw fail("expected a format and a quality 1...100") }
                options.formatQuality[format] = value
            }
        case "mb", "max_bytes":
            guard args.count == 1, let bytes = Int(args[0]), bytes >= 0 else { throw fail("expected mb:{bytes}") }
            options.maxBytes = bytes == 0 ? nil : bytes
        case "f", "format", "ext":
            guard args.count == 1, let format = ProcessingOptions.outputFormat(extension: args[0]) else {
                throw fail("format must be one of jpg, png, webp, avif, gif, tiff")
            }
            options.format = format
        case "sm", "strip_metadata":
            options.stripMetadata = try flag()
        case "kcr", "keep_copyright":
            options.keepCopyright = try flag()
        case "scp", "strip_color_profile":
            options.stripColorProfile = try flag()
        case "skp", "skip_processing":
            guard !args.isEmpty else { throw fail("expected skp:{extension}[:{extension}...]") }
            for text in args {
                guard let format = ImageFormat.allCases.first(where: { $0.fileExtension == text || ($0 == .jpeg && text == "jpeg") })
                else { throw fail("unknown format \"\(text)\"") }
                if !options.skipProcessing.contains(format) { options.skipProcessing.append(format) }
            }
            options.skipProcessing.sort { $0.rawValue < $1.rawValue }
        case "raw":
            options.raw = try flag()
        default:
            try applyDelivery(to: &options)
        }
    }

    /// Expiry, file name, attachment and cache buster.
    private func applyDelivery(to options: inout ProcessingOptions) throws(ParseError) {
        switch name {
        case "exp", "expires":
            guard args.count == 1, let time = Int(args[0]) else { throw fail("expected exp:{unix time}") }
            options.expires = time
        case "fn", "filename":
            guard (1...2).contains(args.count), !args[0].isEmpty else { throw fail("expected fn:{name}[:{base64 encoded}]") }
            options.filename = try filename()
        case "att", "return_attachment":
            options.attachment = try flag()
        case "cb", "cachebuster":
            try expect(1...1, "cb:{string}")
            options.cacheBuster = args[0]
        default:
            throw fail("unknown option \"\(name)\"")
        }
    }

    /// `ex`/`exar`: on (no argument or true) with an optional placement, or off.
    private func extendPlacement() throws(ParseError) -> ProcessingOptions.Placement? {
        if let first = args.first, !(try bool(first)) { return nil }
        let placement = args.count > 1 ? try placement(from: 1) : ProcessingOptions.Placement()
        guard placement.type != .sm else { throw fail("extend gravity cannot be sm") }
        return placement
    }

    /// `wm:{opacity}[:{position}[:{x}:{y}[:{scale}]]]`, position `re` tiling.
    private func watermark() throws(ParseError) -> ProcessingOptions.Watermark {
        try expect(1...5, "wm:{opacity}[:{position}[:{x offset}:{y offset}[:{scale}]]]")
        var mark = ProcessingOptions.Watermark(opacity: try number(args[0], 0...1))
        if args.count > 1, !args[1].isEmpty {
            if args[1] == "re" {
                mark.position = nil
            } else {
                guard let gravity = ProcessingOptions.Gravity(rawValue: args[1]), gravity != .fp, gravity != .sm else {
                    throw fail("watermark position must be ce, no, so, ea, we, noea, nowe, soea, sowe or re")
                }
                mark.position = gravity
            }
        }
        let limit = Double(maxDimension)
        if args.count > 2, !args[2].isEmpty { mark.x = try number(args[2], -limit...limit) }
        if args.count > 3, !args[3].isEmpty { mark.y = try number(args[3], -limit...limit) }
        if args.count > 4, !args[4].isEmpty { mark.scale = try number(args[4], 0...1) }
        return mark
    }
}
