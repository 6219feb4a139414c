# Halcyon — quick start: `make run` (the main job on embedded defaults), `make test`.
# Both install libvips-dev with apt when pkg-config cannot find libvips.

SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CHAIN ?= downsample(640)|>round(24)|>border(4,\#1d3557)
OUT ?= halcyon-out

.PHONY: deps build run test test-asan test-tsan check bench bench-server clean

## deps: install libvips-dev (and pkg-config) when missing.
deps:
	@if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists vips; then \
		echo "==> installing libvips-dev with apt"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq pkg-config libvips-dev; \
	fi

## build: debug build of the library and the `halcyon` tool.
build: deps
	$(SWIFT) build

## run: the whole path on embedded defaults: process Samples/, serve them on loopback, prefetch,
##      fetch through a processor chain (network, memory, then disk hits), cache info; see scripts/demo.sh.
run: build
	@HALCYON_BIN="$$($(SWIFT) build --show-bin-path)/halcyon" OUT='$(OUT)' CHAIN='$(CHAIN)' bash scripts/demo.sh

## test: the whole test suite, one test at a time (timing-sensitive network tests stay honest on 2 cores).
test: deps
	$(SWIFT) test --no-parallel

## test-asan: the image engine and cache tests under AddressSanitizer + LeakSanitizer (own build folder).
ASAN_SUITES := ImageFormatTests|ImageDecoderTests|\.ImageTests|ProcessorTests|ProcessorCompositionTests|ProcessorChainParserTests|SerializerTests|ImageConcurrencyTests|ImageModifierTests|ConformanceTests|MemoryStorageTests|DiskStorageTests|ImageCacheTests
test-asan: deps
	LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/lsan-suppressions.txt $(SWIFT) test --disable-xctest --no-parallel --sanitize=address --scratch-path .build/asan --filter '$(ASAN_SUITES)'

## test-tsan: the downloader, cache, manager, prefetcher and view-target tests (with the 1000-caller
##            stress test) under ThreadSanitizer (own build folder). Any report fails the run.
TSAN_SUITES := ImageDownloaderTests|ImageDownloadRequestTests|ResumableDataStoreTests|MemoryStorageTests|DiskStorageTests|ImageCacheTests|HalcyonManagerFlowTests|HalcyonManagerRevalidationTests|HalcyonOptionsTests|ImagePrefetcherTests|ImageSettableTests|ManagerStressTests|ImageConcurrencyTests
test-tsan: deps
	TSAN_OPTIONS=halt_on_error=0 $(SWIFT) test --disable-xctest --no-parallel --sanitize=thread --scratch-path .build/tsan --filter '$(TSAN_SUITES)'

## check: what CI runs after `make test`: both sanitizer runs.
check: test test-asan test-tsan

## bench: release-mode side-by-side benchmarks; writes bench-results.md. Installs the peers it
##        compares against when missing: vipsthumbnail, curl, wrk, nginx (Debian), thumbor (PyPI).
BENCHMARKS ?= ThumbnailBenchmark CacheBenchmark DownloadBenchmark MemoryBenchmark ServerBenchmark
bench: deps
	@command -v vipsthumbnail >/dev/null 2>&1 && command -v curl >/dev/null 2>&1 && command -v wrk >/dev/null 2>&1 \
		&& command -v nginx >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libvips-tools curl wrk nginx; }
	@command -v thumbor >/dev/null 2>&1 || pip install -q thumbor
	@rm -f bench-results.md
	cd Benchmarks && $(SWIFT) build -c release
	@for benchmark in $(BENCHMARKS); do \
		echo "==> $$benchmark"; \
		(cd Benchmarks && BENCH_RESULTS=$(CURDIR)/bench-results.md .build/release/$$benchmark) || exit 1; \
	done
	@echo "==> results in bench-results.md"

## bench-server: halcyon serve vs nginx (cached) and thumbor 7 (uncached) under wrk; appends to bench-results.md.
## Needs wrk and nginx (apt) and thumbor (pip install thumbor; set THUMBOR=/path/to/thumbor if not on PATH).
bench-server: deps
	cd Benchmarks && BENCH_RESULTS=$(CURDIR)/bench-results.md $(SWIFT) run -c release ServerBenchmark

clean:
	rm -rf .build Benchmarks/.build $(OUT) bench-results.md

## fuzz: libFuzzer + ASan over decode+process and the chain parser, FUZZ_SECONDS each (default 60).
##       Seeds: Tests/Fixtures/Conformance and Fuzz/corpus/chain; new inputs in .build/fuzz/corpus,
##       crashes in .build/fuzz/artifacts (turn one into a fixture + a fix + a test).
FUZZ_SECONDS ?= 60
FUZZ_DIR := .build/fuzz
.PHONY: fuzz
fuzz: deps
	@bin=$$(Fuzz/build.sh) && mkdir -p $(FUZZ_DIR)/corpus/decode $(FUZZ_DIR)/corpus/chain $(FUZZ_DIR)/artifacts && \
	echo "==> DecodeFuzzer for $(FUZZ_SECONDS) s" && \
	VIPS_WARNING=0 $$bin/DecodeFuzzer -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=20 -max_len=65536 -dict=Fuzz/image.dict \
		-artifact_prefix=$(FUZZ_DIR)/artifacts/ $(FUZZ_DIR)/corpus/decode \
		$$(find Tests/Fixtures/Conformance -mindepth 1 -type d) && \
	echo "==> ChainFuzzer for $(FUZZ_SECONDS) s" && \
	VIPS_WARNING=0 $$bin/ChainFuzzer -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 -max_len=256 \
		-artifact_prefix=$(FUZZ_DIR)/artifacts/ $(FUZZ_DIR)/corpus/chain Fuzz/corpus/chain
