# Bindery: `make run` serves the bundled fixture; `make test` runs every check CI runs.
SWIFT ?= swift
PORT ?= 8080
HOST ?= 127.0.0.1
FIXTURE ?= Fixtures/employees
DATA ?= ./data

.PHONY: deps build release run test lint format clean bench-healthz bench-graph bench-controllers container-check container-smoke browser-test

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
	SWIFT=$(SWIFT) bash scripts/swift-test.sh
	@$(MAKE) --no-print-directory lint
	bash scripts/container-check.sh
	bash scripts/browser-test.sh

# The format lint and the docs/ copies of API.md and DESIGN.md (also run by `make test`).
lint:
	$(SWIFT) format lint --strict --recursive Sources Tests Package.swift
	bash scripts/check-docs.sh

format:
	$(SWIFT) format --in-place --recursive Sources Tests Package.swift

clean:
	rm -rf .build

# GET /healthz on Bindery against a bare libmicrohttpd server (issue 2); ROUNDS=, DURATION= to change the length.
bench-healthz:
	bash Benchmarks/bench-healthz.sh

# The object graph's insert and listing benchmarks, and the controllers' re-arrangement benchmark (release builds).
bench-graph: deps
	$(SWIFT) build -c release --scratch-path .build-bench --product ObjectGraphBenchmarks
	.build-bench/release/ObjectGraphBenchmarks

bench-controllers: deps
	$(SWIFT) build -c release --scratch-path .build-ctl-release --product ControllerBenchmarks
	.build-ctl-release/release/ControllerBenchmarks

# The Dockerfile checked without a Docker engine (also run by `make test`).
container-check: deps
	bash scripts/container-check.sh

# The runtime stage assembled with debootstrap and the binary run in it with chroot (needs root and Debian's mirror).
container-smoke: deps
	bash scripts/container-smoke.sh

# The demo page end to end in headless Chromium against a real server (also run by `make test`).
browser-test:
	bash scripts/browser-test.sh
