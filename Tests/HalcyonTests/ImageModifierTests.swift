import Foundation
import Testing
@testable import Halcyon

@Suite("ImageModifier")
struct ImageModifierTests {
    @Test("AnyImageModifier runs its closure on the image")
    func anyModifier() throws {
        let modifier = AnyImageModifier { image in image.withScale(4) }
        let image = try TestImages.gradient(width: 40, height: 20)
        let modified = modifier.modify(image)
        #expect(modified.scale == 4)
        #expect(modified.size == CGSize(width: 10, height: 5))
        #expect(image.scale == 1)
    }

    @Test("options carry the modifier and the last item wins")
    func parsedFromOptions() throws {
        let options = HalcyonParsedOptionsInfo([
            .imageModifier(AnyImageModifier { $0.withScale(2) }),
            .scaleFactor(2), .scaleFactor(3),
            .processor(BlurImageProcessor(blurRadius: 1)), .processor(BlackWhiteProcessor()),
        ])
        let image = try TestImages.gradient()
        #expect(options.imageModifier?.modify(image).scale == 2)
        #expect(options.scaleFactor == 3)
        #expect(options.processor.identifier == BlackWhiteProcessor().identifier)
    }
}
