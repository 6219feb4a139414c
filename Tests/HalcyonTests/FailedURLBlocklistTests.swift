import Foundation
@testable import Halcyon
import Testing

@Suite("Failed-URL blocklist")
struct FailedURLBlocklistTests {
    private func url(_ index: Int) -> URL { URL(string: "https://a.test/\(index).png")! }

    @Test("The default list keeps at most 10 000 URLs, dropping the least recently used")
    func defaultLimit() {
        let list = FailedURLBlocklist()
        for index in 0..<10_001 { list.insert(url(index)) }
        #expect(list.count == 10_000)
        #expect(!list.contains(url(0)), "the oldest entry is dropped")
        #expect(list.contains(url(1)) && list.contains(url(10_000)))
        #expect(list.countLimit == FailedURLBlocklist.defaultCountLimit)
    }

    @Test("A configured limit holds; a lookup keeps a URL from being dropped")
    func lruOrder() {
        let list = FailedURLBlocklist(countLimit: 3)
        for index in 0..<3 { list.insert(url(index)) }
        #expect(list.contains(url(0)), "a hit marks url 0 as recently used")
        list.insert(url(3))
        #expect(list.count == 3)
        #expect(list.contains(url(0)) && !list.contains(url(1)) && list.contains(url(2)) && list.contains(url(3)))
        // Lookups count as use: the order is now 0, 2, 3 (oldest first).
        list.insert(url(2))
        list.insert(url(4))
        #expect(!list.contains(url(0)) && list.contains(url(3)) && list.contains(url(2)) && list.contains(url(4)))
        list.remove(url(4))
        #expect(list.count == 2)
        list.removeAll()
        #expect(list.count == 0 && !list.contains(url(0)))
        for index in 0..<100 { list.insert(url(index)) }
        #expect(list.count == 3 && list.contains(url(99)))
    }
}
