# agentgate — build, run and test. `make run` and `make test` are the two set-up commands.
SHELL := /bin/bash
GO ?= go
BIN := bin
VERSION ?= 0.1.0-dev
COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -s -w -X github.com/agentgate-dev/agentgate/internal/version.Version=$(VERSION) -X github.com/agentgate-dev/agentgate/internal/version.Commit=$(COMMIT)
export CGO_ENABLED := 0

.PHONY: all build run test test-deps test-go lint bench fuzz clean release verify-release

all: build

## build: every binary into ./bin (pure Go, CGO_ENABLED=0)
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

## run: lockerd on the embedded SQLite store at ./locker.db, on 127.0.0.1:8000
run: build
	@echo "make run serves Padlock (lockerd). The other two parts run on demand, in another terminal:"
	@echo "  ./bin/agentgate lock      pin your MCP servers' tools in agentgate.lock  (README: Pin your MCP tools)"
	@echo "  ./bin/toolwarrant init    approve the exact tool definitions agents see  (README: toolwarrant)"
	LOCKER_DB_PATH=$${LOCKER_DB_PATH:-locker.db} $(BIN)/lockerd

## test-deps: the pinned npm MCP servers and tools the integration tests use (test/package-lock.json)
test-deps: test/node_modules/.package-lock.json
test/node_modules/.package-lock.json: test/package.json test/package-lock.json
	@if command -v npm >/dev/null; then npm ci --prefix test --no-audit --no-fund --loglevel=error; \
	else echo "npm not found: tests that need npm packages will skip"; fi

## test: vet and every test (integration tests start what they need; see README), through
## gotestsum (pinned by the tool line in go.mod): one line per package, then every skipped
## test by name with its reason, every failure, and the totals. Without gotestsum (offline,
## say) it falls back to go test; either way a failure fails make test.
GOTESTSUM_FLAGS ?= --format pkgname --format-hide-empty-pkg
TEST_FLAGS ?= -count=1 -timeout 20m
test: test-deps
	$(GO) vet ./...
	@if $(GO) tool gotestsum --version >/dev/null 2>&1; then \
	  echo "$(GO) tool gotestsum $(GOTESTSUM_FLAGS) -- $(TEST_FLAGS) ./..."; \
	  $(GO) tool gotestsum $(GOTESTSUM_FLAGS) -- $(TEST_FLAGS) ./...; \
	else \
	  echo "gotestsum is not available (go tool gotestsum failed): running go test, which lists skips only with -v"; \
	  $(GO) test $(TEST_FLAGS) ./...; \
	fi

## lint: golangci-lint (install: go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0)
lint:
	golangci-lint run ./...

## bench: the benchmarks quoted in README.md
bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./internal/httpapi/ ./internal/sqlitestore/ ./internal/locker/ ./internal/lockerclient/ ./internal/canon/ ./internal/audit/ ./test/toolwarrant/

## fuzz: each fuzz target for a short while (FUZZTIME=30s)
FUZZTIME ?= 20s
fuzz:
	@for pkg in $$($(GO) list ./internal/...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
	  done; done

## release: reproducible, signed artifacts of one commit (COMMIT=HEAD OUT=/abs/dir KEY=~/.ssh/key)
COMMIT ?= HEAD
release:
	@test -n "$(OUT)" || { echo "usage: make release COMMIT=<commit-ish> OUT=<dir outside the tree> [KEY=<ssh private key>]"; exit 2; }
	$(GO) run ./scripts/release build --commit '$(COMMIT)' --out '$(OUT)' $(if $(KEY),--key '$(KEY)')

## verify-release: check a release directory (DIR=... ALLOWED_SIGNERS=file IDENTITY=name)
verify-release:
	@test -n "$(DIR)" || { echo "usage: make verify-release DIR=<release dir> [ALLOWED_SIGNERS=<file> IDENTITY=<signer>]"; exit 2; }
	$(GO) run ./scripts/release verify --dir '$(DIR)' $(if $(ALLOWED_SIGNERS),--allowed-signers '$(ALLOWED_SIGNERS)' --identity '$(IDENTITY)')

clean:
	rm -rf $(BIN)

## build-PadsFunction: the pads Lambda's bootstrap for SAM's makefile build method (sam build)
ARTIFACTS_DIR ?= $(BIN)/PadsFunction
LAMBDA_GOARCH ?= arm64
.PHONY: build-PadsFunction test-integration
build-PadsFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags '$(LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap ./functions/pads

## test-integration: the AWS integration tests, required (never skipped): moto_server by default,
## or the endpoint in AWS_ENDPOINT_URL (e.g. AWS_ENDPOINT_URL=http://localhost:4566 for LocalStack)
test-integration:
	AGENTGATE_REQUIRE_AWS=1 $(GO) test -count=1 ./internal/awstest/ ./internal/dynamostore/ ./functions/... ./test/rie/ ./test/template/

## generate: the ExtMcp gRPC bindings (internal/extmcp/pb) from proto/agentgateway/ext_mcp.proto;
## needs protoc (apt-get install -y protobuf-compiler) and installs the pinned plugins into bin/tools
PROTOC_GEN_GO_VERSION ?= v1.36.12
PROTOC_GEN_GO_GRPC_VERSION ?= v1.5.1
TOOLS := $(abspath $(BIN)/tools)
.PHONY: generate
generate:
	@command -v protoc >/dev/null || { echo "protoc not found: apt-get install -y protobuf-compiler"; exit 2; }
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	PATH=$(TOOLS):$$PATH $(GO) generate ./internal/extmcp/pb/

## build-CrawlFunction, build-ApprovalsFunction, build-CheckpointFunction: the toolwarrant
## Lambdas' bootstraps for SAM's makefile build method (sam build)
.PHONY: build-CrawlFunction build-ApprovalsFunction build-CheckpointFunction
build-CrawlFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags '$(LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap ./functions/crawl
build-ApprovalsFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags '$(LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap ./functions/approvals
build-CheckpointFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags '$(LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap ./functions/checkpoint
