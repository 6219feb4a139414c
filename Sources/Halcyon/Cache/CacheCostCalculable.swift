/// A value that can say how much memory it occupies, for ``MemoryStorage``'s cost limit.
public protocol CacheCostCalculable {
    /// The cost in bytes charged against `totalCostLimit`.
    var cacheCost: Int { get }
}

extension Image: CacheCostCalculable {
    /// The decoded pixel bytes, ``Image/cost``.
    public var cacheCost: Int { cost }
}
