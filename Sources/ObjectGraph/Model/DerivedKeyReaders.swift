/// Which derived keys read a stored property of another object: what a commit that changes the property must move
/// the version (ETag) of besides the changed object's own.
///
/// `EntityDescription.derivedKeyReaders[property]` lists walks back from an object whose property changed to the
/// objects whose derived keys read it there: each walk is relationship indexes (each on the entity reached so far),
/// the inverses of the derived key path's relationships, last first (`Department.name` is read by `departmentName`
/// of every Employee in the department's `employees`). A property a derived key reads on its own object has no walk
/// (changing it moves the object's version anyway). Collection operators pass the walk on to each element; nested
/// derived keys are read through; a key after an `any` attribute reads no object.
enum DerivedKeyReaders {
    static func index(_ entities: inout [EntityDescription]) {
        var found: [[Property: Set<[Int]>]] = entities.map { _ in [:] }
        func walk(_ steps: ArraySlice<KeyStep>, on entity: Int, back: [Int]) {
            guard let step = steps.first else { return }
            switch step {
            case .this:
                walk(steps.dropFirst(), on: entity, back: back)
            case .collectionOperator(_, let rest):  // always the last step: `rest` is the path after the operator
                walk(rest[...], on: entity, back: back)
            case .key(let lookup):
                guard let property = lookup.properties[entity] else { return }
                switch property {
                case .attribute:
                    if !back.isEmpty { found[entity][property, default: []].insert(back) }
                case .relationship(let index):
                    if !back.isEmpty { found[entity][property, default: []].insert(back) }
                    let relationship = entities[entity].relationships[index]
                    walk(
                        steps.dropFirst(), on: relationship.destinationIndex,
                        back: [relationship.inverseIndex] + back)
                case .derived(let index):
                    walk(
                        appending(steps.dropFirst(), to: entities[entity].derivedKeys[index].steps)[...],
                        on: entity, back: back)
                }
            }
        }
        for entity in entities.indices {
            for derived in entities[entity].derivedKeys { walk(derived.steps[...], on: entity, back: []) }
        }
        for entity in entities.indices {
            entities[entity].derivedKeyReaders = found[entity].mapValues {
                $0.sorted { $0.lexicographicallyPrecedes($1) }
            }
        }
    }

    /// `steps` followed by `rest`: inside its last collection operator's path, which is where the keys after it apply.
    private static func appending(_ rest: ArraySlice<KeyStep>, to steps: [KeyStep]) -> [KeyStep] {
        guard !rest.isEmpty else { return steps }
        guard case .collectionOperator(let op, let inner)? = steps.last else { return steps + rest }
        return steps.dropLast() + [.collectionOperator(op, rest: appending(rest, to: inner))]
    }
}
