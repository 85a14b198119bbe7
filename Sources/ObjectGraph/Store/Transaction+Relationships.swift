/// Inverse maintenance: every relationship change is made on both sides, each side recorded as its own step.
///
/// Moving an employee to another department (setting `Employee.department`) removes it from the old department's
/// `employees` and appends it to the new one's; setting a to-many detaches removed elements and takes added ones
/// away from their previous owner when the inverse is a to-one. To-many relationships are ordered sets: an object
/// appears at most once.
extension Transaction {
    func setToOneMaintainingInverse(
        _ owner: ObjectHandle, _ index: Int, _ destination: ObjectHandle?
    ) throws(ObjectGraphError) {
        let relationship = state.relationship(owner, index)
        let old = state.toOne(owner, relationship)
        guard old != destination else { return }
        if let old { detach(owner, from: old, relationship.inverseIndex) }
        if let destination { attach(owner, to: destination, through: relationship) }
        setToOne(owner, index, destination)
    }

    func setToManyMaintainingInverse(_ owner: ObjectHandle, _ index: Int, _ rows: [Int32]) throws(ObjectGraphError) {
        let relationship = state.relationship(owner, index)
        let old = state.toManyRows(owner, relationship)
        guard old != rows else { return }
        let kept = Set(rows)
        let had = Set(old)
        for row in old where !kept.contains(row) {
            detach(
                owner, from: ObjectHandle(entity: relationship.destinationIndex, row: Int(row)),
                relationship.inverseIndex)
        }
        for row in rows where !had.contains(row) {
            attach(owner, to: ObjectHandle(entity: relationship.destinationIndex, row: Int(row)), through: relationship)
        }
        setToMany(owner, index, rows)
    }

    func insert(
        _ element: ObjectHandle, into owner: ObjectHandle, _ index: Int, at position: Int?
    ) throws(ObjectGraphError) {
        let relationship = state.relationship(owner, index)
        let rows = state.toManyRows(owner, relationship)
        let position = position ?? rows.count
        guard (0...rows.count).contains(position) else {
            throw .validationFailed(
                relationship.name, of: state.objectID(of: owner),
                "index \(position) is out of range (\(relationship.name) has \(rows.count)).")
        }
        guard !rows.contains(Int32(element.row)) else {
            throw .validationFailed(
                relationship.name, of: state.objectID(of: owner),
                "\(relationship.name) already contains \(state.objectID(of: element)).")
        }
        if !isSelfInverse(relationship, owner, element) { attach(owner, to: element, through: relationship) }
        insertToMany(owner, index, Int32(element.row), at: position)
    }

    func remove(at position: Int, from owner: ObjectHandle, _ index: Int) throws(ObjectGraphError) {
        let relationship = state.relationship(owner, index)
        let element = ObjectHandle(
            entity: relationship.destinationIndex, row: Int(state.toManyRows(owner, relationship)[position]))
        removeToMany(owner, index, at: position)
        detach(owner, from: element, relationship.inverseIndex)
    }

    func replace(
        at position: Int, of owner: ObjectHandle, _ index: Int, with element: ObjectHandle
    ) throws(ObjectGraphError) {
        let relationship = state.relationship(owner, index)
        let rows = state.toManyRows(owner, relationship)
        let old = ObjectHandle(entity: relationship.destinationIndex, row: Int(rows[position]))
        guard old != element else { return }
        guard !rows.contains(Int32(element.row)) else {
            throw .validationFailed(
                relationship.name, of: state.objectID(of: owner),
                "\(relationship.name) already contains \(state.objectID(of: element)).")
        }
        if isSelfInverse(relationship, owner, old) || isSelfInverse(relationship, owner, element) {
            try remove(at: position, from: owner, index)
            try insert(element, into: owner, index, at: position)
            return
        }
        detach(owner, from: old, relationship.inverseIndex)
        attach(owner, to: element, through: relationship)
        replaceToMany(owner, index, Int32(element.row), at: position)
    }

    /// Removes `owner` from `destination`'s inverse relationship (whichever kind it is).
    private func detach(_ owner: ObjectHandle, from destination: ObjectHandle, _ inverseIndex: Int) {
        let inverse = state.relationship(destination, inverseIndex)
        if inverse.isToMany {
            if let position = state.toManyRows(destination, inverse).firstIndex(of: Int32(owner.row)) {
                removeToMany(destination, inverseIndex, at: position)
            }
        } else if state.toOne(destination, inverse) == owner {
            setToOne(destination, inverseIndex, nil)
        }
    }

    /// Makes `destination`'s inverse of `relationship` include `owner`, taking `destination` away from its previous
    /// owner first when that inverse is a to-one.
    private func attach(
        _ owner: ObjectHandle, to destination: ObjectHandle, through relationship: RelationshipDescription
    ) {
        let inverseIndex = relationship.inverseIndex
        let inverse = state.relationship(destination, inverseIndex)
        if inverse.isToMany {
            // From a to-one the owner cannot be in the list yet (its old destination was detached first): skip the
            // linear search, which would make filling a large to-many quadratic.
            let count = state.toManyRows(destination, inverse).count
            if !relationship.isToMany || !state.toManyRows(destination, inverse).contains(Int32(owner.row)) {
                insertToMany(destination, inverseIndex, Int32(owner.row), at: count)
            }
            return
        }
        guard let previous = state.toOne(destination, inverse), previous != owner else {
            setToOne(destination, inverseIndex, owner)
            return
        }
        let ownIndex = inverse.inverseIndex
        if relationship.isToMany {
            if let position = state.toManyRows(previous, relationship).firstIndex(of: Int32(destination.row)) {
                removeToMany(previous, ownIndex, at: position)
            }
        } else {
            setToOne(previous, ownIndex, nil)
        }
        setToOne(destination, inverseIndex, owner)
    }

    /// Whether `relationship` is its own inverse and the element is the owner (`friends` containing oneself).
    private func isSelfInverse(_ relationship: RelationshipDescription, _ owner: ObjectHandle, _ element: ObjectHandle)
        -> Bool
    {
        owner == element && state.relationship(element, relationship.inverseIndex).name == relationship.name
    }
}
