# Bindery: `make run` serves the bundled fixture; `make test` runs every check CI runs.
SWIFT ?= swift
PORT ?= 8080
HOST ?= 127.0.0.1
FIXTURE ?= Fixtures/employees
DATA ?= ./data

.PHONY: deps build release run test lint format clean

deps:
	@bash scripts/install-deps.sh

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

run: release
	.build/release/bindery serve --fixture $(FIXTURE) --data $(DATA) --host $(HOST) --port $(PORT)

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --parallel
	$(SWIFT) format lint --strict --recursive Sources Tests Package.swift

format:
	$(SWIFT) format --in-place --recursive Sources Tests Package.swift

clean:
	rm -rf .build
