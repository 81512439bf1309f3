# codemode: `make serve` builds and runs the gateway, `make test` runs every test.
# Every setup step (the QuickJS wasm from npm, npm MCP servers for end-to-end tests, Go tools)
# is fetched here, pinned and verified; nothing third-party is committed.

GO        ?= go
BIN       := bin/codemode
WASM      := internal/quickjs/assets/quickjs.wasm
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOFLAGS_TEST ?= -race -timeout 15m

.PHONY: all wasm build serve test test-short lint check bench fuzz testdeps clean

all: build

$(WASM): internal/quickjs/assets/quickjs-wasi.json scripts/fetch-quickjs.sh
	scripts/fetch-quickjs.sh

wasm: $(WASM)

build: wasm
	$(GO) build -o $(BIN) ./cmd/codemode

serve: build
	$(BIN) serve

# npm packages the end-to-end tests start as real MCP servers (pinned; installed into .cache/npm),
# redis-server and haproxy (Debian packages, when root) for the run-store and affinity tests, and
# MCP Inspector (npm, pinned, into .cache/inspector) for the one-shot client test.
testdeps:
	scripts/install-test-servers.sh
	scripts/install-redis.sh
	scripts/install-inspector.sh
	scripts/install-haproxy.sh

test: wasm testdeps
	$(GO) test $(GOFLAGS_TEST) ./...

test-short: wasm
	$(GO) test -short ./...

lint: wasm
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

check: lint test

bench: build
	$(BIN) bench
	$(GO) test -run '^$$' -bench . -benchtime 200x ./internal/sandbox/ ./internal/search/ .

# Every fuzz target, FUZZTIME each (a fuzz target's corpus also runs in `make test`).
FUZZTIME ?= 10s
fuzz: wasm
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 20x $$pkg; \
	  done; \
	done

clean:
	rm -rf bin .cache
