import Foundation

/// Something shown on a target while its image loads.
public protocol Placeholder: Sendable {
    /// Shows the placeholder on `target`.
    func add(to target: any ImageSettable)
    /// Takes the placeholder off `target` when the image arrives.
    func remove(from target: any ImageSettable)
}

extension Image: Placeholder {
    /// Shows this image on the target.
    public func add(to target: any ImageSettable) {
        target.setImage(self, transition: .none)
    }

    /// Nothing to do: the loaded image replaces this one.
    public func remove(from target: any ImageSettable) {}
}
