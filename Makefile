# agentgate — build, run and test. `make run` and `make test` are the two set-up commands.
SHELL := /bin/bash
GO ?= go
BIN := bin
VERSION ?= 0.1.0-dev
COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -s -w -X github.com/agentgate-dev/agentgate/internal/version.Version=$(VERSION) -X github.com/agentgate-dev/agentgate/internal/version.Commit=$(COMMIT)
export CGO_ENABLED := 0

.PHONY: all build run test test-deps test-go lint bench fuzz clean release verify-release image-binaries image-base images

all: build

## build: every binary into ./bin (pure Go, CGO_ENABLED=0)
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

## run: lockerd on the embedded SQLite store at ./locker.db, on 127.0.0.1:8000
run: build
	@echo "make run serves Padlock (lockerd). The other two parts run on demand, in another terminal:"
	@echo "  ./bin/agentgate lock      pin your MCP servers' tools in agentgate.lock  (README: Pin your MCP tools)"
	@echo "  ./bin/toolwarrant init    approve the exact tool definitions agents see  (README: toolwarrant)"
	@echo "  ./bin/toolwarrant demo    see a rug pull blocked end to end, offline     (README: See it block a rug pull)"
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

## bench: the figures of README.md's performance table (scripts/bench): one table printed, bench.json
## written, the README table regenerated from it; every ratio against a baseline in the same run
bench:
	$(GO) run ./scripts/bench -out bench.json -readme README.md

## bench-scale: the scale benchmark (test/scale; docs/aws.md, "Scale: measured and modelled"): the crawl
## function, a replica's approvals refresh and the audit log's appends at a stated fraction of 5,000 servers
## × 40 tools, and a crawl of 500 servers through the fan-out, against moto and a fake fleet on loopback (about
## 15 min); its figures merged into bench.json,
## the others kept. Neither make bench nor make test runs it. SCALE_SERVERS, SCALE_SMALL, ... resize it.
.PHONY: bench-scale
bench-scale:
	$(GO) run ./scripts/bench -scale -out bench.json

## fuzz: each fuzz target for a short while (FUZZTIME, default 20s)
FUZZTIME ?= 20s
fuzz:
	@for pkg in $$($(GO) list ./internal/...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
	  done; done

## release: reproducible, signed artifacts of one commit (COMMIT=HEAD OUT=/abs/dir KEY=~/.ssh/key), with
## the container images as OCI archives (needs podman; IMAGE_BASE=local where no registry is
## reachable; IMAGES=0 for none)
COMMIT ?= HEAD
release:
	@test -n "$(OUT)" || { echo "usage: make release COMMIT=<commit-ish> OUT=<dir outside the tree> [KEY=<ssh private key>] [IMAGE_BASE=local|<image>] [IMAGES=0] [PLATFORMS=linux/amd64,...] [ONLY=lockerd,...]"; exit 2; }
	$(GO) run ./scripts/release build --commit '$(COMMIT)' --out '$(OUT)' $(if $(KEY),--key '$(KEY)') $(if $(IMAGE_BASE),--image-base '$(IMAGE_BASE)') $(if $(filter 0,$(IMAGES)),--images=false) $(if $(PLATFORMS),--platforms '$(PLATFORMS)') $(if $(ONLY),--only '$(ONLY)')

## verify-release: check a release directory and its signature (DIR=... ALLOWED_SIGNERS=file
## IDENTITY=name), or everything but the signature (DIR=... UNSIGNED=1)
verify-release:
	@test -n "$(DIR)" || { echo "usage: make verify-release DIR=<release dir> ALLOWED_SIGNERS=<file> IDENTITY=<signer>   (or UNSIGNED=1 instead of the signer)"; exit 2; }
	$(GO) run ./scripts/release verify --dir '$(DIR)' $(if $(ALLOWED_SIGNERS),--allowed-signers '$(ALLOWED_SIGNERS)' --identity '$(IDENTITY)') $(if $(filter 1,$(UNSIGNED)),--unsigned)

clean:
	rm -rf $(BIN)

## Container images (infra/README.md). The Dockerfiles copy release-built binaries: image-binaries
## builds them into ./bin with the release's flags, for IMAGE_ARCH (default: this machine's).
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
IMAGE_TAG ?= latest
PODMAN ?= podman
LOCAL_BASE := localhost/agentgate/base:local-$(IMAGE_ARCH)

## image-binaries: bin/lockerd_linux_$(IMAGE_ARCH) and bin/toolwarrant_linux_$(IMAGE_ARCH) (static, -trimpath, no build ID)
image-binaries:
	for b in lockerd toolwarrant; do \
	  GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -buildvcs=false -ldflags '$(LDFLAGS) -buildid=' -o $(BIN)/$${b}_linux_$(IMAGE_ARCH) ./cmd/$$b || exit 1; done

## image-base: the local base $(LOCAL_BASE) (infra/base: this machine's CA bundle, uid/gid 65532), for machines without registry access
image-base:
	rm -rf $(BIN)/base && mkdir -p $(BIN)/base/etc/ssl/certs
	cp infra/base/passwd infra/base/group $(BIN)/base/etc/ && cp /etc/ssl/certs/ca-certificates.crt $(BIN)/base/etc/ssl/certs/
	chmod 0755 $(BIN)/base/etc $(BIN)/base/etc/ssl $(BIN)/base/etc/ssl/certs && chmod 0644 $(BIN)/base/etc/passwd $(BIN)/base/etc/group $(BIN)/base/etc/ssl/certs/ca-certificates.crt
	$(PODMAN) build --no-cache --platform linux/$(IMAGE_ARCH) -f infra/base/Dockerfile -t $(LOCAL_BASE) $(BIN)/base

## images: agentgate/lockerd:$(IMAGE_TAG) and agentgate/toolwarrant:$(IMAGE_TAG) from image-binaries, on the Dockerfiles'
## distroless base (pulled), or with IMAGE_BASE=local on the local base (built first, nothing pulled); PODMAN=docker
## builds with Docker (BuildKit)
BASE_ARG = $(if $(filter local,$(IMAGE_BASE)),--build-arg BASE=$(LOCAL_BASE),$(if $(IMAGE_BASE),--build-arg BASE=$(IMAGE_BASE)))
images: image-binaries $(if $(filter local,$(IMAGE_BASE)),image-base)
	$(PODMAN) build --platform linux/$(IMAGE_ARCH) $(BASE_ARG) -f infra/lockerd/Dockerfile -t agentgate/lockerd:$(IMAGE_TAG) .
	$(PODMAN) build --platform linux/$(IMAGE_ARCH) $(BASE_ARG) -f infra/extmcp/Dockerfile -t agentgate/toolwarrant:$(IMAGE_TAG) .

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

## build-CrawlFunction, build-CrawlDispatchFunction, build-ApprovalsFunction, build-CheckpointFunction, build-InterceptorFunction,
## build-AuditSequencerFunction:
## the toolwarrant Lambdas' bootstraps for SAM's makefile build method (sam build)
.PHONY: build-CrawlFunction build-CrawlDispatchFunction build-ApprovalsFunction build-CheckpointFunction build-InterceptorFunction build-AuditSequencerFunction
build-CrawlFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags '$(LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap ./functions/crawl
build-CrawlDispatchFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags '$(LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap ./functions/crawldispatch
build-AuditSequencerFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags '$(LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap ./functions/auditsequencer
build-ApprovalsFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags '$(LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap ./functions/approvals
build-CheckpointFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags '$(LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap ./functions/checkpoint
build-InterceptorFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags '$(LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap ./functions/interceptor

## print-VAR: the value of a make variable (CI reads the pinned tool versions this way)
print-%:
	@echo '$($*)'
