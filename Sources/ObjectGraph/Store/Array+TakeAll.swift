extension Array {
    /// The elements, leaving the array empty: with room for as many again unless they were a burst of more than
    /// 1,024, so that a queue emptied batch by batch does not regrow 1, 2, 4, 8... for every batch.
    package mutating func takeAll() -> [Element] {
        let taken = self
        removeAll(keepingCapacity: taken.count <= 1024)
        return taken
    }
}
