# Halcyon — quick start: `make run` (the main job on embedded defaults), `make test`.
# Both install libvips-dev with apt when pkg-config cannot find libvips.

SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CHAIN ?= downsample(640)|>round(24)|>border(4,\#1d3557)
OUT ?= halcyon-out

.PHONY: deps build run test test-asan bench bench-server clean

## deps: install libvips-dev (and pkg-config) when missing.
deps:
	@if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists vips; then \
		echo "==> installing libvips-dev with apt"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq pkg-config libvips-dev; \
	fi

## build: debug build of the library and the `halcyon` tool.
build: deps
	$(SWIFT) build

## run: process the bundled samples through a processor chain into ./halcyon-out/.
run: build
	@echo "==> halcyon $$($(SWIFT) build --show-bin-path)/halcyon"
	@$$($(SWIFT) build --show-bin-path)/halcyon version
	@echo "==> processing Samples/ with '$(CHAIN)' into ./$(OUT)/"
	@$$($(SWIFT) build --show-bin-path)/halcyon process Samples $(OUT) -p '$(CHAIN)'
	@echo "==> converting the animated sample to WebP, every frame kept"
	@$$($(SWIFT) build --show-bin-path)/halcyon process Samples/spinner.gif $(OUT)/spinner-small.webp -p 'downsample(120)|>tint(#1d355740)'
	@echo "==> done: $$(ls $(OUT) | wc -l) files in ./$(OUT)/"

## test: the whole test suite, one test at a time (timing-sensitive network tests stay honest on 2 cores).
test: deps
	$(SWIFT) test --no-parallel

## test-asan: the image engine tests under AddressSanitizer (separate build folder).
test-asan: deps
	$(SWIFT) test --disable-xctest --sanitize=address --scratch-path .build/asan --filter 'Image|Processor|Serializer|Decoder'

## bench: release-mode side-by-side benchmarks; writes bench-results.md.
bench: deps
	@command -v vipsthumbnail >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libvips-tools
	@rm -f bench-results.md
	cd Benchmarks && BENCH_RESULTS=$(CURDIR)/bench-results.md $(SWIFT) run -c release ThumbnailBenchmark
	@echo "==> results in bench-results.md"

## bench-server: halcyon serve vs nginx (cached) and thumbor 7 (uncached) under wrk; appends to bench-results.md.
## Needs wrk and nginx (apt) and thumbor (pip install thumbor; set THUMBOR=/path/to/thumbor if not on PATH).
bench-server: deps
	cd Benchmarks && BENCH_RESULTS=$(CURDIR)/bench-results.md $(SWIFT) run -c release ServerBenchmark

clean:
	rm -rf .build Benchmarks/.build $(OUT) bench-results.md
