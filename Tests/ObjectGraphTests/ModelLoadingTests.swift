import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

struct ModelLoadingTests {
    @Test func loadsTheEmployeesModel() throws {
        let model = try employeesModel()
        #expect(model.entities.map(\.name) == ["Department", "Employee"])
        let employee = try #require(model.entity(named: "Employee"))
        #expect(employee.attributes.map(\.name) == ["active", "firstName", "hireDate", "lastName", "salary"])
        #expect(employee.attribute(named: "salary")?.type == .integer)
        #expect(employee.attribute(named: "salary")?.minimum == 0)
        #expect(employee.attribute(named: "active")?.defaultValue == true)
        let department = try #require(employee.relationship(named: "department"))
        #expect(department.isRequired && !department.isToMany && department.deleteRule == .nullify)
        #expect(model.entities[department.destinationIndex].name == "Department")
        #expect(model.entities[department.destinationIndex].relationships[department.inverseIndex].name == "employees")
        #expect(employee.relationship(named: "directReports")?.maxCount == 15)
        #expect(model.entity(named: "Department")?.derivedKey(named: "payroll")?.keyPath == "employees.@sum.salary")
    }

    @Test func modelJSONLoadsBackTheSame() throws {
        let model = try employeesModel()
        let again = try ObjectModel(json: model.json)
        #expect(again.json == model.json)
        #expect(model.json["entities"]?["Department"]?["relationships"]?["employees"]?["deleteRule"] == "deny")
    }

    @Test func misspelledInverseNamesFileEntityAndKey() throws {
        let json = """
            {"entities": {
              "Department": {"relationships": {"employees": {"destination": "Employee", "toMany": true,
                "inverse": "department"}}},
              "Employee": {"relationships": {"department": {"destination": "Department", "inverse": "employes"}}}}}
            """
        let error = expectError("invalid-model") { _ = try model(json) }
        #expect(
            error?.message
                == "model.json: entity Employee, key department: inverse \"employes\" is not a relationship of Department."
        )
        #expect(error?.fields["entity"] == "Employee")
        #expect(error?.fields["key"] == "department")
    }

    @Test func inverseMustPointBack() throws {
        let json = """
            {"entities": {"A": {"relationships": {
              "b": {"destination": "B", "inverse": "a"}, "c": {"destination": "B", "inverse": "a"}}},
              "B": {"relationships": {"a": {"destination": "A", "inverse": "b"}}}}}
            """
        let error = expectError("invalid-model") { _ = try model(json) }
        #expect(error?.message.hasPrefix("model.json: entity A, key c: inverse B.a does not point back") == true)
    }

    @Test(arguments: [
        (#"{"entities": {"E": {"attributes": {"x": {"type": "float"}}}}}"#, "entity E, key x: \"type\" must be"),
        (
            #"{"entities": {"E": {"attributes": {"x": {"type": "string", "requierd": true}}}}}"#,
            "has no setting \"requierd\""
        ),
        (
            #"{"entities": {"E": {"attributes": {"x": {"type": "string", "pattern": "("}}}}}"#,
            "valid regular expression"
        ),
        (#"{"entities": {"E": {"attributes": {"x": {"type": "integer", "min": 5, "default": 1}}}}}"#, "\"default\""),
        (#"{"entities": {"E": {"attributes": {"x": {"type": "boolean", "min": 1}}}}}"#, "\"min\" applies to"),
        (#"{"entities": {"E": {"attributes": {"x": {"type": "integer", "min": 1.2, "max": 1.8}}}}}"#, "no 64-bit"),
        (#"{"entities": {"E": {"attributes": {"x": {"type": "integer", "min": 9.3e18}}}}}"#, "no 64-bit integer"),
        (#"{"entities": {"E": {"attributes": {"x": {"type": "integer", "max": -1e300}}}}}"#, "no 64-bit integer"),
        (
            #"{"entities": {"E": {"attributes": {"x": {"type": "string", "maxLength": 3, "enum": ["big", "large"]}}}}}"#,
            "\"enum\" value \"large\""
        ),
        (#"{"entities": {"E": {"derived": {"d": "nope"}}}}"#, "entity E, key d: key path \"nope\""),
        (#"{"entities": {"E": {"derived": {"a": "b", "b": "a"}}}}"#, "cycle"),
        (#"{"entities": {"E": {"relationships": {"r": {"destination": "F", "inverse": "x"}}}}}"#, "not an entity"),
        (#"{"entities": {"E": {"relationships": {"r": {"destination": "E"}}}}}"#, "\"inverse\" is missing"),
        (#"{"entities": {"E": {"attributes": {"self": {"type": "string"}}}}}"#, "identifier"),
        (#"{"entities": {}}"#, "non-empty"),
        (#"{"entities": {"E": {"attributes": {"x": {"type": "string"}}, "derived": {"x": "x"}}}}"#, "defined twice"),
    ])
    func badModelsAreRefused(json: String, expected: String) throws {
        let error = expectError("invalid-model", status: 500) { _ = try model(json) }
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
        #expect(error?.message.hasPrefix("model.json: ") == true)
    }

    @Test func derivedKeyPathsAreCheckedThroughRelationships() throws {
        let json = """
            {"entities": {
              "Department": {"attributes": {"name": {"type": "string"}},
                "relationships": {"employees": {"destination": "Employee", "toMany": true, "inverse": "department"}},
                "derived": {"payroll": "employees.@sum.salry"}},
              "Employee": {"attributes": {"salary": {"type": "integer"}},
                "relationships": {"department": {"destination": "Department", "inverse": "employees"}}}}}
            """
        let error = expectError("invalid-model") { _ = try model(json) }
        #expect(error?.message.contains("entity Department, key payroll") == true)
        #expect(error?.message.contains("Employee has no key \"salry\"") == true)
    }

    /// Types an operator cannot take are refused at start, not at every read of a non-empty collection.
    @Test(arguments: [
        ("@sum.name", "@sum needs numbers, not string"), ("@avg.hired", "@avg needs numbers, not date"),
        ("@sum.group", "@sum needs numbers, not objects (G)"), ("@max.group", "@max needs values, not objects (G)"),
        ("@min.group.members", "@min needs values, not collections"),
    ])
    func collectionOperatorsOfTheWrongTypeAreRefused(path: String, expected: String) throws {
        let json = """
            {"entities": {"G": {"relationships": {"members": {"destination": "P", "toMany": true, "inverse": "group"}},
                "derived": {"d": "members.\(path)"}},
              "P": {"attributes": {"name": {"type": "string"}, "hired": {"type": "date"}, "age": {"type": "integer"}},
                "relationships": {"group": {"destination": "G", "inverse": "members"}}}}}
            """
        let error = expectError("invalid-model") { _ = try model(json) }
        #expect(
            error?.message.contains("entity G, key d: key path \"members.\(path)\": \(expected)") == true,
            "\(error?.message ?? "")")
        for fine in ["@sum.age", "@avg.age", "@max.name", "@min.hired", "@max.age"] {
            _ = try model(json.replacingOccurrences(of: "members.\(path)", with: "members.\(fine)"))
        }
    }

    /// A long chain of derived keys (each read by the one before) is refused with a message, not a stack overflow.
    /// Whatever the order keys are resolved in (by name): from the top of the chain (a deep recursion), or from its
    /// bottom (each key's chain is resolved already when the next is, and evaluating a long one would still overflow
    /// a thread's stack).
    @Test(arguments: [false, true])
    func aLongChainOfDerivedKeysIsRefused(bottomFirst: Bool) throws {
        func chain(_ length: Int) -> String {
            // Zero-padded, so that names sort as the chain runs.
            let name = { (index: Int) in "d" + String(repeating: "0", count: 5 - String(index).count) + String(index) }
            let keys = (0..<length).map { index in
                let read =
                    bottomFirst ? (index == 0 ? "x" : name(index - 1)) : (index == length - 1 ? "x" : name(index + 1))
                return "\"\(name(index))\": \"\(read)\""
            }
            return #"{"entities": {"E": {"attributes": {"x": {"type": "integer"}}, "derived": {"#
                + keys.joined(separator: ", ") + "}}}}"
        }
        #expect(try model(chain(100)).entity(named: "E")?.derivedKeys.count == 100)
        for length in [101, 10_000] {
            let error = expectError("invalid-model") { _ = try model(chain(length)) }
            #expect(
                error?.message.contains("a chain of derived keys, each read by the one before, may be at most 100 long")
                    == true, "\(error?.message ?? "")")
            #expect(error?.message.hasPrefix("model.json: entity E, key d") == true)
        }
    }

    /// A derived key that, the derived keys it reads written out, would have more keys than a key path may is refused:
    /// `p1` = `p0.p0`, `p2` = `p1.p1`, ... double at each step (a commit walks them all to find a change's readers).
    @Test func aDerivedKeyWrittenOutPastAKeyPathsKeysIsRefused() throws {
        func doubling(_ count: Int) -> String {
            let keys = (0..<count).map { index in
                "\"p\(index)\": \"\(index == 0 ? "manager" : "p\(index - 1).p\(index - 1)")\""
            }
            return #"{"entities": {"E": {"relationships": {"#
                + #""manager": {"destination": "E", "inverse": "reports"}, "#
                + #""reports": {"destination": "E", "toMany": true, "inverse": "manager"}}, "derived": {"#
                + keys.joined(separator: ", ") + "}}}}"
        }
        #expect(try model(doubling(7)).entity(named: "E")?.derivedKeys.count == 7)  // p6: 64 keys
        let error = expectError("invalid-model") { _ = try model(doubling(8)) }
        #expect(
            error?.message.hasPrefix(
                "model.json: entity E, key p7: Key path \"p6.p6\": with the derived keys it reads written out, it "
                    + "would have 128 keys; a key path may have at most 100.") == true, "\(error?.message ?? "")")
    }

    /// A chain too long is named by the key the loader was resolving, not by the one deep inside where the count ran
    /// out (whose own key path may be a plain attribute).
    @Test func aChainTooLongIsNamedByItsFirstKey() throws {
        let keys = (0..<150).map { "\"c\($0)\": \"\($0 == 149 ? "x" : "c\($0 + 1)")\"" }
        let json =
            #"{"entities": {"E": {"attributes": {"x": {"type": "integer"}}, "derived": {"#
            + keys.joined(separator: ", ") + "}}}}"
        let error = expectError("invalid-model") { _ = try model(json) }
        #expect(
            error?.message.hasPrefix("model.json: entity E, key c0: Key path \"c1\"") == true, "\(error?.message ?? "")"
        )
    }

    @Test func derivedKeysMayUseOtherDerivedKeys() throws {
        let json = """
            {"entities": {"E": {"attributes": {"x": {"type": "integer"}}, "derived": {"a": "b", "b": "x"}}}}
            """
        #expect(try model(json).entity(named: "E")?.derivedKeys.count == 2)
    }

    @Test func checkNamesAMissingFile() {
        let error = expectError("invalid-model") { _ = try ObjectModel.check(file: "/nonexistent/model.json") }
        #expect(error?.message.hasPrefix("/nonexistent/model.json: ") == true)
    }

    @Test func malformedJSONIsAModelError() {
        let error = expectError("invalid-model") { _ = try model("{\"entities\": ") }
        #expect(error?.message.hasPrefix("model.json: malformed JSON") == true)
    }

    @Test func constraintsAreParsed() throws {
        let json = """
            {"entities": {"E": {"attributes": {
              "code": {"type": "string", "pattern": "[A-Z]{3}", "minLength": 3, "maxLength": 3},
              "level": {"type": "string", "enum": ["low", "high"], "default": "low"},
              "when": {"type": "date", "min": "2000-01-01"}}}}}
            """
        let entity = try #require(try model(json).entity(named: "E"))
        #expect(entity.attribute(named: "code")?.pattern?.pattern == "[A-Z]{3}")
        #expect(entity.attribute(named: "level")?.allowedValues == ["low", "high"])
        if case .date = entity.attribute(named: "when")?.minimum {} else { Issue.record("min of a date is a date") }
    }
}
