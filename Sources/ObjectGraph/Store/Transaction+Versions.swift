/// Versions (ETags): an object's version is the seq of the last commit that changed it or a property one of its
/// derived keys reads (`ReadView.version(of:)`), kept in the tables and moved at commit.
extension Transaction {
    /// Whether committing now moves the object's version (its ETag, `ReadView.version(of:)`) to the commit's seq: the
    /// transaction changed it, or a property of another object that one of its derived keys reads. False for an object
    /// that does not exist; true for every object after `replaceGraph` (which may keep some versions).
    public func changesVersion(of object: ObjectID) -> Bool {
        guard let handle = state.existingHandle(of: object) else { return false }
        if resetIndex != nil || steps.contains(where: { $0.target == handle }) { return true }
        return derivedKeyReaders(of: changedProperties()).contains(handle)
    }

    /// Moves the versions of what the transaction changed to `seq` (see `changesVersion(of:)`); after
    /// `replaceGraph`, every object's but those it kept as they were (`keptVersions`) and whose derived keys read
    /// nothing it changed.
    func moveVersions(to seq: Int64) {
        guard let resetIndex else {
            for step in steps {
                guard let handle = step.target, state.isAlive(handle) else { continue }
                state.tables[handle.entity].versions[handle.row] = seq
            }
            guard movesReadersVersions else { return }
            for handle in derivedKeyReaders(of: changedProperties()) where state.isAlive(handle) {
                state.tables[handle.entity].versions[handle.row] = seq
            }
            return
        }
        for table in state.tables {
            for row in 0..<table.rowCount where table.alive[row] { table.versions[row] = seq }
        }
        guard keepsUnchangedVersions, !keptVersions.isEmpty else { return }
        var moved = Set(steps[(resetIndex + 1)...].compactMap(\.target))
        if movesReadersVersions {
            moved.formUnion(derivedKeyReaders(of: replacedProperties + changedProperties(from: resetIndex + 1)))
        }
        for (handle, version) in keptVersions where state.isAlive(handle) && !moved.contains(handle) {
            state.tables[handle.entity].versions[handle.row] = version
        }
    }

    /// The properties the steps from `start` on changed.
    private func changedProperties(from start: Int = 0) -> [ChangedProperty] {
        guard state.model.hasDerivedKeyReaders else { return [] }
        return steps[start...].compactMap { step in
            switch step {
            case .attribute(let object, let slot, _, _):
                ChangedProperty(object: object, property: .attribute(slot))
            case .toOne(let object, let index, _, _), .toManySet(let object, let index, _, _),
                .toManyInsert(let object, let index, _, _), .toManyRemove(let object, let index, _, _),
                .toManyReplace(let object, let index, _, _, _):
                ChangedProperty(object: object, property: .relationship(index))
            // A new object is read by others only once a relationship leads to it, a deleted one no longer (both
            // are relationship changes of their own); a reset's changes are `replacedProperties`.
            case .created, .deleted, .reset: nil
            }
        }
    }

    /// The objects whose derived keys read one of the changed properties (`DerivedKeyReaders`), in the graph as it
    /// is now: every relationship has an inverse kept in step, so whatever a derived key path reaches now is found
    /// from the changed object, and an object the path reached before but no longer does changed itself.
    private func derivedKeyReaders(of changed: [ChangedProperty]) -> Set<ObjectHandle> {
        var readers: Set<ObjectHandle> = []
        var seen: Set<ChangedProperty> = []
        for entry in changed where state.isAlive(entry.object) {
            guard let walks = state.model.entities[entry.object.entity].derivedKeyReaders[entry.property],
                seen.insert(entry).inserted
            else { continue }
            for walk in walks {
                var reached: Set<ObjectHandle> = [entry.object]
                for relationship in walk {
                    var next: Set<ObjectHandle> = []
                    for handle in reached {
                        next.formUnion(state.destinations(handle, state.relationship(handle, relationship)))
                    }
                    reached = next
                }
                readers.formUnion(reached)
            }
        }
        return readers
    }
}

/// A property a transaction changed, for `Transaction.moveVersions(to:)`.
struct ChangedProperty: Hashable {
    var object: ObjectHandle
    var property: Property
}
