# Halcyon — quick start: `make run` (the main job on embedded defaults), `make test`.
# Both install libvips-dev with apt when pkg-config cannot find libvips.

SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CHAIN ?= downsample(640)|>round(24)|>border(4,\#1d3557)
OUT ?= halcyon-out

.PHONY: deps test-deps test-fleet test-vapor examples bench-fleet bench-tracing bench-ab build release run test test-asan test-tsan check docs bench bench-server bench-cli soak clean

## deps: install libvips-dev, libisal-dev (ISA-L's CRC-32 and Adler-32, for the PNG loader), libdeflate-dev (the PNG
##       encoder's compression) and pkg-config when missing.
deps:
	@if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists vips libisal libdeflate; then \
		echo "==> installing libvips-dev, libisal-dev and libdeflate-dev with apt"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq pkg-config libvips-dev libisal-dev libdeflate-dev; \
	fi

## test-deps: deps, and redis-server (the shared-storage tests start their own on a free loopback port).
test-deps: deps
	@command -v redis-server >/dev/null 2>&1 || { echo "==> installing redis-server with apt"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq redis-server; }

## build: debug build of the library and the `halcyon` tool.
build: deps
	$(SWIFT) build

## run: the whole path on embedded defaults: process Samples/, serve them on loopback, prefetch,
##      fetch through a processor chain (network, memory, then disk hits), cache info; see scripts/demo.sh.
run: build
	@HALCYON_BIN="$$($(SWIFT) build --show-bin-path)/halcyon" OUT='$(OUT)' CHAIN='$(CHAIN)' bash scripts/demo.sh

## test: the whole test suite. Suites that measure time, CPU use or kill processes (TIMED_SUITES) run one
##       test at a time, so that two cores shared with other tests do not skew what they measure; every
##       other suite runs in parallel, at most PARALLEL_TESTS tests at once. Unbounded, every test starts at
##       once and their synchronous setup holds the two-thread cooperative pool: a task asleep for 10 ms woke
##       up to 8.6 s late, past the 10 s waits of tests that then failed; with 6 at once, at most 0.9 s, in
##       the same total time.
PARALLEL_TESTS ?= 6
TIMED_SUITES := DegenerateShapeTests|WorkQueueExecutorTests|ServerLookupTests|HostLookupTests|ServerEncodeBoundTests|ServerCachedHitTests|RenderCancellationTests|PipelineRegressionTests|DiskStorageTests|ServerHostileTrafficTests|ServerSlowReaderTests|HealthAndQueueTests|HalcyonOptionsTests|ImageDownloaderTests|ManagerStressTests|HalcyonManagerFlowTests|HalcyonManagerRevalidationTests|ServerSSRFTests|ServerLocalTests|ServerCacheTests|ServerLimitTests|ServerLifecycleTests|ServerGateTests|CLITests|RedisClientTests|ServerSharedStorageTests|ImagePrefetcherLoadTests
test: test-deps
	$(SWIFT) build --build-tests
	SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(PARALLEL_TESTS) $(SWIFT) test --skip-build --skip '$(TIMED_SUITES)'
	$(SWIFT) test --skip-build --no-parallel --filter '$(TIMED_SUITES)'

## test-asan: the image engine and cache tests under AddressSanitizer + LeakSanitizer (own build folder).
ASAN_SUITES := RenderCancellationTests|FastReduceTests|ExactDownsamplingTests|PNGShrinkLoaderTests|PNGInflateAgreementTests|PNGInflateLongStreamTests|PNGCommentKeyTests|PNGDeflateEncoderTests|JPEGInlineEncoderTests|WebPAVIFInlineEncoderTests|WebPScalingLoaderTests|ImageFormatTests|ImageDecoderTests|\.ImageTests|ProcessorTests|ProcessorCompositionTests|ProcessorChainParserTests|SerializerTests|ImageConcurrencyTests|ImageModifierTests|ConformanceTests|MemoryStorageTests|DiskStorageTests|ImageCacheTests|EffectProcessorTests|BlurHashTests
test-asan: deps
	LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/lsan-suppressions.txt $(SWIFT) test --disable-xctest --no-parallel --sanitize=address --scratch-path .build/asan --filter '$(ASAN_SUITES)'

## test-tsan: the downloader, cache, manager, prefetcher and view-target tests (with the 1000-caller
##            stress test) under ThreadSanitizer (own build folder). Any report fails the run. Built without the
##            default OpenTelemetry trait: swift-otel 1.6 does not compile with -sanitize=thread on Swift 6.3.
TSAN_SUITES := LockedTests|MemoryBudgetTests|AdmissionTests|ConnectionTableTests|ImageCacheTierTests|HostLookupTests|ServerLookupTests|AnimatedFrameCacheTests|ServerGateTests|ImageDownloaderTests|ImageDownloadRequestTests|ResumableDataStoreTests|MemoryStorageTests|DiskStorageTests|ImageCacheTests|HalcyonManagerFlowTests|HalcyonManagerRevalidationTests|HalcyonManagerPipelineFixTests|PipelineStageTests|PipelineRegressionTests/(joinerWith|missOpens|priorityDrops|scaleIs)|HalcyonOptionsTests|ImagePrefetcherTests|ImageSettableTests|ManagerStressTests|ImageConcurrencyTests|KingfisherParityTests|RedisClientTests|DataStorageTierTests|ProgressiveJPEGTests|KingfisherDataAPITests|KingfisherTaskUpdatedTests|KingfisherCacheAPITests|HCBuilderTests|NetworkRetryStrategyTests|KingfisherErrorPayloadTests|ImageDownloaderStaleConnectionTests|ImageDownloaderContentCodingTests|ResponseStatusGuardHTTP2Tests|ServerKeepAliveTests|ServerHostileTrafficTests/(connection|pipelined)|ServerSlowReaderTests/stalled
test-tsan: deps
	TSAN_OPTIONS=halt_on_error=0 $(SWIFT) test --disable-xctest --no-parallel --sanitize=thread --disable-default-traits --scratch-path .build/tsan --filter '$(TSAN_SUITES)'

## test-fleet: 3 `halcyon serve` nodes sharing a redis-server behind nginx (deploy/nginx/halcyon.conf), one
##             node SIGKILLed mid-run: zero failed requests, each repeated URL computed once, nginx cache hits,
##             results shared through Redis; then one request whose node dies under it reaches at most 2 of the
##             3 nodes. Installs nginx and redis-server with apt when missing.
test-fleet: test-deps
	$(SWIFT) build --product halcyon
	HALCYON_BIN="$$($(SWIFT) build --show-bin-path)/halcyon" bash scripts/test-fleet.sh

## test-vapor: HalcyonVapor (Integrations/HalcyonVapor, a package of its own: `make test` never builds Vapor), built
##             and tested. examples: builds both apps of Examples/ (one package). Both use one build folder,
##             SHARED_BUILD (default Integrations/.build-shared), so the examples reuse the test build's products
##             and compile only their own two files (28 s after a cold test-vapor of 11.5 min). CI passes the root's
##             .build after `make test`: Halcyon, SwiftNIO, swift-crypto and Hummingbird are then reused, and only
##             Vapor's own packages compile (2.5 min). SWIFT_DETERMINISTIC_HASHING keeps SwiftPM's order of a
##             package's trait flags (-DFullFoundation -DConfigurationSupport for Hummingbird) the same from one
##             `swift build` to the next: in another order, Hummingbird is compiled again.
SHARED_BUILD ?= $(CURDIR)/Integrations/.build-shared
SHARED_SWIFT := SWIFT_DETERMINISTIC_HASHING=1 $(SWIFT)
test-vapor: deps
	cd Integrations/HalcyonVapor && $(SHARED_SWIFT) build --build-tests --scratch-path $(SHARED_BUILD)
	cd Integrations/HalcyonVapor && $(SHARED_SWIFT) test --skip-build --scratch-path $(SHARED_BUILD)
examples: deps
	cd Examples && $(SHARED_SWIFT) build --scratch-path $(SHARED_BUILD)

## check: what CI runs after `make test`: both sanitizer runs.
check: test test-asan test-tsan

## docs: the DocC reference of the public modules (Halcyon, HalcyonServer: their articles and every public
##       symbol) with swift-docc-plugin, any DocC warning (a broken symbol link, a bad topic) an error. Reuses
##       the debug build in .build; archives in .build/plugins/Swift-DocC/outputs/<module>.doccarchive.
DOCS_TARGETS := Halcyon HalcyonServer
docs: deps
	$(SWIFT) package generate-documentation $(foreach target,$(DOCS_TARGETS),--target $(target)) --warnings-as-errors

## release: the shipped `halcyon`, optimised, with the Swift runtime and Foundation linked in
##          (--static-swift-stdlib): it runs where libvips and its codecs are installed, with no Swift
##          toolchain, and starts in about 40 ms less CPU than a build that loads them as shared libraries
##          (dynamic symbol lookups were most of a short `halcyon process`). Every release target uses it.
RELEASE_FLAGS := -c release --static-swift-stdlib
release: deps
	$(SWIFT) build $(RELEASE_FLAGS) --product halcyon
	@echo "==> $$($(SWIFT) build -c release --show-bin-path)/halcyon"

## bench: release-mode side-by-side benchmarks in one run; writes bench-results.md (a summary of every
##        ratio, then each benchmark's table). Installs the peers it compares against when missing:
##        vipsthumbnail, curl, wrk, nginx, redis-server (Debian), Pillow and thumbor (PyPI). The
##        server and CLI benchmarks run the shipped release `halcyon` with its defaults, on real
##        photographs (scripts/bench-photos.sh: Debian's plasma-workspace-wallpapers, downloaded only).
BENCHMARKS ?= ThumbnailBenchmark CLIBenchmark CacheBenchmark StorageTierBenchmark RetrieveHitBenchmark ResponseCacheBenchmark DownloadBenchmark MemoryBenchmark RetrieveMemoryBenchmark PrefetchBenchmark ServerBenchmark
BENCH_WORK := $(CURDIR)/.build/bench
BENCH_PHOTOS := $(CURDIR)/.build/bench-photos
BENCH_ENV = HALCYON_BIN="$$($(SWIFT) build -c release --show-bin-path)/halcyon" BENCH_PHOTOS=$(BENCH_PHOTOS)
# thumbor 7.7.x answers AVIF requests with JPEG; 7.8 needs the AVIF plugin for Pillow to encode AVIF.
THUMBOR_PINS := thumbor==7.8.0 pillow-avif-plugin
INSTALL_THUMBOR = thumbor --version 2>/dev/null | grep -q 'v7\.8\.' && python3 -c 'import pillow_avif' 2>/dev/null || \
	pip install -q $(THUMBOR_PINS) || pip install -q --break-system-packages $(THUMBOR_PINS)
bench: deps
	@command -v vipsthumbnail >/dev/null 2>&1 && command -v curl >/dev/null 2>&1 && command -v wrk >/dev/null 2>&1 \
		&& command -v nginx >/dev/null 2>&1 && command -v redis-server >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libvips-tools curl wrk nginx redis-server python3-pip; }
	@python3 -c 'import PIL' 2>/dev/null || pip install -q pillow || pip install -q --break-system-packages pillow
	@$(INSTALL_THUMBOR)
	@rm -rf $(BENCH_WORK) bench-results.md && mkdir -p $(BENCH_WORK)
	bash scripts/bench-photos.sh $(BENCH_PHOTOS)
	$(SWIFT) build $(RELEASE_FLAGS) --product halcyon
	cd Benchmarks && $(SWIFT) build -c release
	@failed=""; for benchmark in $(BENCHMARKS); do \
		echo "==> $$benchmark"; \
		(cd Benchmarks && $(BENCH_ENV) BENCH_RESULTS=$(BENCH_WORK)/sections.md BENCH_SUMMARY=$(BENCH_WORK)/summary.md \
			.build/release/$$benchmark) || failed="$$failed $$benchmark"; \
	done; \
	{ echo "# Halcyon benchmark results"; echo; \
	  echo "\`make bench\` on $$(date -u '+%Y-%m-%d %H:%M UTC'), $$(nproc) cores, $$(uname -m), libvips $$(pkg-config --modversion vips), $$($(SWIFT) --version 2>/dev/null | head -1)."; echo; \
	  echo "## Summary"; echo; \
	  echo "| benchmark | comparison | result | goal | met |"; echo "|---|---|---|---|:-:|"; \
	  cat $(BENCH_WORK)/summary.md 2>/dev/null; echo; \
	  cat $(BENCH_WORK)/sections.md 2>/dev/null; } > bench-results.md; \
	echo; echo "| benchmark | comparison | result | goal | met |"; cat $(BENCH_WORK)/summary.md 2>/dev/null; echo; \
	echo "==> results in bench-results.md"; \
	if [ -n "$$failed" ]; then echo "benchmarks that failed or missed their goal:$$failed"; exit 1; fi

## bench-fleet: req/s of 3 nodes (sharing redis-server) vs 1 node behind the recipe's nginx, cold and mixed
##              workloads, with nginx's hit ratio (scripts/bench-fleet.sh). bench-tracing: req/s with and
##              without --trace-endpoint on a cache hit and a full request (scripts/bench-tracing.sh).
bench-fleet: deps
	$(SWIFT) build $(RELEASE_FLAGS) --product halcyon
	HALCYON_BIN="$$($(SWIFT) build -c release --show-bin-path)/halcyon" bash scripts/bench-fleet.sh
bench-tracing: deps
	$(SWIFT) build $(RELEASE_FLAGS) --product halcyon
	HALCYON_BIN="$$($(SWIFT) build -c release --show-bin-path)/halcyon" bash scripts/bench-tracing.sh

## bench-ab: BINS="before=BINARY after=BINARY": release `halcyon serve` binaries side by side, each with
##           its defaults, on uncached resizes of the photographs (local sources, a distinct URL each,
##           wrk -c CLIENTS, default 2), the order rotating over ROUNDS (default 3); prints each binary's
##           median req/s against the first's, CPU per request, cores busy and peak RSS (scripts/bench-ab.sh).
bench-ab:
	@command -v wrk >/dev/null 2>&1 && command -v curl >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq wrk curl; }
	bash scripts/bench-photos.sh $(BENCH_PHOTOS)
	PHOTOS=$(BENCH_PHOTOS) bash scripts/bench-ab.sh

## soak: a release `halcyon serve` under an unsigned /health flood plus signed uncached resizes (with
##       worst-case requests and bad signatures) for SOAK_SECONDS (default 600); fails on a crash, an
##       unanswered request, or peak RSS over the configured budgets + 64 MB. Needs wrk and python3.
soak: deps
	@command -v wrk >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq wrk python3; }
	$(SWIFT) build $(RELEASE_FLAGS) --product halcyon
	HALCYON_BIN="$$($(SWIFT) build -c release --show-bin-path)/halcyon" bash scripts/soak.sh

## bench-server: imgproxy's image-servers shape: the shipped `halcyon serve` (release, defaults) vs thumbor 7
##               (2 processes, HTTP loader) resizing real photographs (12 × JPEG/PNG/WebP, 2560×1600) and 21
##               generated 2–12 MP sources from a loopback nginx to fit 512×512 in JPEG/PNG/WebP/AVIF, at 1
##               (halcyon only: wall ÷ CPU), 2 and 8 clients, BENCH_SECONDS (default 60) per side and cell,
##               ROUNDS (default 2); plus cached responses vs nginx. Appends to bench-results.md. Needs wrk,
##               nginx, libvips-tools (apt) and thumbor (pip). bench-cli: `halcyon process` vs vipsthumbnail
##               and Pillow on the photographs.
bench-server: deps
	@$(INSTALL_THUMBOR)
	bash scripts/bench-photos.sh $(BENCH_PHOTOS)
	$(SWIFT) build $(RELEASE_FLAGS) --product halcyon
	cd Benchmarks && $(BENCH_ENV) BENCH_RESULTS=$(CURDIR)/bench-results.md $(SWIFT) run -c release ServerBenchmark
bench-cli: deps
	bash scripts/bench-photos.sh $(BENCH_PHOTOS)
	$(SWIFT) build $(RELEASE_FLAGS) --product halcyon
	cd Benchmarks && $(BENCH_ENV) BENCH_RESULTS=$(CURDIR)/bench-results.md $(SWIFT) run -c release CLIBenchmark

clean:
	rm -rf .build Benchmarks/.build $(SHARED_BUILD) $(OUT) bench-results.md

## fuzz: libFuzzer + ASan over decode+process, the chain parser and the server's request path
##       (URL parser, signature, options, source resolver), FUZZ_SECONDS each (default 60).
##       Seeds: Tests/Fixtures/Conformance, Fuzz/corpus/chain and Fuzz/corpus/url; new inputs in .build/fuzz/corpus,
##       crashes in .build/fuzz/artifacts (turn one into a fixture + a fix + a test).
FUZZ_SECONDS ?= 60
FUZZ_DIR := .build/fuzz
.PHONY: fuzz fuzz-png
## fuzz-png: the shrinking PNG loader under libFuzzer + ASan with libvips' decode as the oracle, for
##           PNG_FUZZ_SECONDS (default 90; CI runs it); see Fuzz/png/run.sh.
PNG_FUZZ_SECONDS ?= 90
fuzz-png: deps
	sh Fuzz/png/run.sh $(PNG_FUZZ_SECONDS)

fuzz: deps
	@bin=$$(Fuzz/build.sh) && mkdir -p $(FUZZ_DIR)/corpus/decode $(FUZZ_DIR)/corpus/chain $(FUZZ_DIR)/corpus/url $(FUZZ_DIR)/artifacts && \
	echo "==> DecodeFuzzer for $(FUZZ_SECONDS) s" && \
	VIPS_WARNING=0 $$bin/DecodeFuzzer -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=20 -max_len=65536 -dict=Fuzz/image.dict \
		-artifact_prefix=$(FUZZ_DIR)/artifacts/ $(FUZZ_DIR)/corpus/decode \
		$$(find Tests/Fixtures/Conformance -mindepth 1 -type d) && \
	echo "==> ChainFuzzer for $(FUZZ_SECONDS) s" && \
	VIPS_WARNING=0 $$bin/ChainFuzzer -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 -max_len=256 \
		-artifact_prefix=$(FUZZ_DIR)/artifacts/ $(FUZZ_DIR)/corpus/chain Fuzz/corpus/chain && \
	echo "==> URLFuzzer for $(FUZZ_SECONDS) s" && \
	VIPS_WARNING=0 $$bin/URLFuzzer -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 -max_len=512 -dict=Fuzz/url.dict \
		-artifact_prefix=$(FUZZ_DIR)/artifacts/ $(FUZZ_DIR)/corpus/url Fuzz/corpus/url
