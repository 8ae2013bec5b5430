# func-operator — run `make help` for the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_TOOLS_VERSION ?= v0.16.5
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
GO_TEST_FLAGS ?= -count=1 -timeout 30m
PKGS ?= ./...

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Development

.PHONY: build
build: ## Build the operator binary into bin/.
	go build -o $(LOCALBIN)/func-operator ./cmd/func-operator

.PHONY: generate
generate: manifests ## Regenerate deepcopy code, the CRD and the ClusterRole.

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Regenerate config/300-function.yaml, config/200-clusterrole.yaml and deepcopy code.
	CONTROLLER_GEN=$(CONTROLLER_GEN) hack/update-codegen.sh

.PHONY: verify-generated
verify-generated: $(CONTROLLER_GEN) ## Fail when generated files are stale.
	CONTROLLER_GEN=$(CONTROLLER_GEN) hack/update-codegen.sh --verify

.PHONY: third-party
third-party: ## Copy the Knative Serving and Eventing, Tekton and KEDA HTTP add-on CRDs of the pinned modules into third_party/.
	hack/update-third-party.sh

.PHONY: verify-third-party
verify-third-party: ## Fail when third_party/ differs from the modules go.mod pins.
	hack/update-third-party.sh --verify

.PHONY: vet
vet: ## go vet.
	go vet ./...

.PHONY: lint
lint: ## golangci-lint (.golangci.yml): kubebuilder's linters, gofmt/goimports, and depguard: only pkg/funclib imports knative.dev/func.
	"$$(hack/golangci-lint.sh)" run ./...

.PHONY: verify-tracked-files
verify-tracked-files: ## Fail when git tracks a build output or a file over 1 MiB.
	hack/verify-tracked-files.sh

.PHONY: control-plane
control-plane: ## Build (once, cached) etcd, kube-apiserver, kubectl and kube-controller-manager for envtest.
	@hack/control-plane.sh >/dev/null

# The oldest Kubernetes the README supports, for test/install (make control-plane-min).
MIN_K8S_VERSION ?= v1.30.14
MIN_ETCD_VERSION ?= v3.5.21

.PHONY: control-plane-min
control-plane-min: ## Build (once, cached) the control plane of the oldest supported Kubernetes (MIN_K8S_VERSION), for test/install.
	@K8S_VERSION=$(MIN_K8S_VERSION) ETCD_VERSION=$(MIN_ETCD_VERSION) hack/control-plane.sh >/dev/null

.PHONY: tekton-controller
tekton-controller: ## Build (once, cached) the Tekton Pipelines controller go.mod pins, for the tests.
	@hack/tekton-controller.sh >/dev/null

.PHONY: test-deps
test-deps: ## Install git and sshd for the tests if they are missing (apt-get, as root).
	@hack/test-deps.sh

.PHONY: ko
ko: ## Build (once, cached) ko from the module proxy.
	@hack/ko.sh >/dev/null

.PHONY: promtool
promtool: ## Build (once, cached) promtool from the module proxy, for test/monitoring.
	@hack/promtool.sh >/dev/null

.PHONY: test
test: test-deps verify-tracked-files verify-generated verify-third-party vet lint control-plane control-plane-min tekton-controller ko promtool ## Run every test against a real control plane (and the oldest supported one for the install), Tekton controller, git servers, sshd, ko and promtool, then fuzz-short.
	KUBEBUILDER_ASSETS="$$(hack/control-plane.sh)" FUNC_OPERATOR_KUBEBUILDER_ASSETS_MIN="$$(K8S_VERSION=$(MIN_K8S_VERSION) ETCD_VERSION=$(MIN_ETCD_VERSION) hack/control-plane.sh)" \
		FUNC_OPERATOR_TEKTON_CONTROLLER="$$(hack/tekton-controller.sh)" FUNC_OPERATOR_KO="$$(hack/ko.sh)" FUNC_OPERATOR_PROMTOOL="$$(hack/promtool.sh)" \
		FUNC_OPERATOR_REQUIRE_SSHD=1 FUNC_OPERATOR_REQUIRE_ALL=1 go test $(GO_TEST_FLAGS) $(PKGS)
	@$(MAKE) --no-print-directory fuzz-short

# The quick tier: every package but the integration ones (pkg/operator wires the manager,
# test/ runs the binary, hack/run runs make run), with -short: tests that need a control
# plane (envtest.Shared, envtest.StartT) or build the binary skip. Pure logic and
# loopback git servers only: no Tekton controller, no ko.
UNIT_PKGS ?= $$(go list ./... | grep -v -e /test/ -e /pkg/operator -e /hack/)

.PHONY: test-unit
test-unit: ## The quick tier: go test -short over the non-integration packages, no control plane (make test runs everything).
	go test -short -count=1 $(UNIT_PKGS)

# The func-facing tests, for a func bump (docs/upgrading-func.md): the adapter on a real
# API server with func's real templates, the middleware table and image labels, the Tekton
# controller with the kubelet simulation, and the operator's rebuild and func deploy tests.
FUNC_PKGS ?= ./pkg/funclib/ ./pkg/middleware/ ./pkg/registry/ ./test/tekton/
FUNC_OPERATOR_TESTS ?= Rebuild|Build|Fleet|FuncDeploy|Knative|NamespaceNotOnboarded|UpstreamFunction

.PHONY: test-func
test-func: test-deps control-plane tekton-controller ## Run the func-facing tests alone (first step of a func bump).
	KUBEBUILDER_ASSETS="$$(hack/control-plane.sh)" FUNC_OPERATOR_TEKTON_CONTROLLER="$$(hack/tekton-controller.sh)" FUNC_OPERATOR_REQUIRE_SSHD=1 \
		go test $(GO_TEST_FLAGS) $(FUNC_PKGS)
	KUBEBUILDER_ASSETS="$$(hack/control-plane.sh)" FUNC_OPERATOR_TEKTON_CONTROLLER="$$(hack/tekton-controller.sh)" FUNC_OPERATOR_REQUIRE_SSHD=1 \
		go test $(GO_TEST_FLAGS) ./pkg/operator/ -run '$(FUNC_OPERATOR_TESTS)'

# The scale benchmark's parameters: make bench-scale N=1000 R=50 INTERVAL=10s WINDOW=2 [CONCURRENCY=8] [RAW=0.5] [KEDA=0.25] [TABLE=file.md]
# [PLAIN=1: the binary run by hand, without the Deployment's flags and environment] [PROFILE=file: the steady state's CPU profile]
# [ARGS="--kube-api-qps=100 ...": more flags for the operator]
# (RAW and KEDA: the shares of the Functions func's raw and keda deployers deployed; the rest are Knative.
# KNATIVE_OBJECTS=1: each Knative function gets the labelled Revision Deployment and Services Knative Serving makes.)
bench-scale: N ?= 1000
bench-scale: R ?= 50
bench-scale: INTERVAL ?= 10s
bench-scale: WINDOW ?= 2
bench-scale: CONCURRENCY ?=
bench-scale: TABLE ?=
bench-scale: RAW ?= 0
bench-scale: KEDA ?= 0
bench-scale: KNATIVE_OBJECTS ?= 0
bench-scale: PLAIN ?= 0
bench-scale: PROFILE ?=
bench-scale: ARGS ?=

.PHONY: bench-scale
bench-scale: ## Scale benchmark (not part of test): N Functions on R repositories against the operator binary; TABLE=<file> adds a markdown row.
	KUBEBUILDER_ASSETS="$$(hack/control-plane.sh)" FUNC_OPERATOR_SCALE_N=$(N) FUNC_OPERATOR_SCALE_R=$(R) FUNC_OPERATOR_SCALE_INTERVAL=$(INTERVAL) \
		FUNC_OPERATOR_SCALE_WINDOW=$(WINDOW) FUNC_OPERATOR_SCALE_CONCURRENCY=$(CONCURRENCY) FUNC_OPERATOR_SCALE_TABLE=$(if $(TABLE),$(abspath $(TABLE))) \
		FUNC_OPERATOR_SCALE_RAW=$(RAW) FUNC_OPERATOR_SCALE_KEDA=$(KEDA) FUNC_OPERATOR_SCALE_KNATIVE_OBJECTS=$(KNATIVE_OBJECTS) \
		FUNC_OPERATOR_SCALE_PLAIN=$(PLAIN) FUNC_OPERATOR_SCALE_PROFILE=$(if $(PROFILE),$(abspath $(PROFILE))) \
		FUNC_OPERATOR_SCALE_ARGS="$(ARGS)" \
		go test -tags scale -count=1 -timeout 90m -run TestScale -v ./test/scale/

# Go fuzz targets, as package:Target pairs: `go test -fuzz` fuzzes one target of one package at a time.
FUZZ_TARGETS ?= \
	./pkg/funclib:FuzzLoadFuncYAML \
	./pkg/funclib:FuzzCheckNoLocalEnv \
	./pkg/git:FuzzRepositoryURL \
	./pkg/git:FuzzRepositoryPath \
	./pkg/git:FuzzRemoteHead \
	./pkg/registry:FuzzKeychain \
	./pkg/registry:FuzzBuildInfo \
	./pkg/receiver:FuzzNormalizeURL
FUZZTIME ?= 5m
# Minimizing each new interesting input for go's default 60s would leave a short run idle.
FUZZ_FLAGS ?= -fuzzminimizetime=10s

# run-fuzz fuzzes every one of FUZZ_TARGETS for $(1), and fails after them all if any failed.
# Go's fuzzing (1.26) sometimes ends a run that found nothing with the bare error "context
# deadline exceeded" when its time is up while it minimizes a new interesting input (seen
# twice in 14 short runs here, never on a failing input): such a run, which wrote no failing
# input to testdata/fuzz/, is run once more. Any other failure counts at once.
define run-fuzz
failed=""; \
for pt in $(FUZZ_TARGETS); do \
	pkg="$${pt%%:*}"; target="$${pt##*:}"; \
	for try in 1 2; do \
		echo "fuzz: $$target ($$pkg) for $(1)"; \
		out="$$(go test -run='^$$' -fuzz="^$$target"'$$' -fuzztime=$(1) $(FUZZ_FLAGS) "$$pkg" 2>&1)" && { echo "$$out"; break; }; \
		echo "$$out"; \
		if [ "$$try" = 1 ] && echo "$$out" | grep -qx '[[:space:]]*context deadline exceeded' && ! echo "$$out" | grep -q 'Failing input written'; then \
			echo "fuzz: $$target ended on Go's fuzzing deadline with no failing input: once more"; continue; fi; \
		failed="$$failed $$pt"; break; \
	done; \
done; \
if [ -n "$$failed" ]; then echo "fuzz: failed:$$failed (failing inputs are in each package's testdata/fuzz/)"; exit 1; fi
endef

.PHONY: fuzz
fuzz: ## Fuzz each of FUZZ_TARGETS for FUZZTIME (5m); a failing input lands in its package's testdata/fuzz/.
	@$(call run-fuzz,$(FUZZTIME))

.PHONY: fuzz-short
fuzz-short: ## Fuzz each of FUZZ_TARGETS for 10s (the last step of make test).
	@$(call run-fuzz,10s)

##@ Install

export KO_CONFIG_PATH := $(CURDIR)/ko.yaml

.PHONY: install
install: ko ## Build the operator with ko and install it on the cluster in KUBECONFIG (needs KO_DOCKER_REPO).
	"$$(hack/ko.sh)" apply -f config/

.PHONY: resolve
resolve: ko ## Print config/ with the image ko builds (needs KO_DOCKER_REPO).
	"$$(hack/ko.sh)" resolve -f config/

# The release: make release VERSION=v0.1.0 KO_DOCKER_REPO=ghcr.io/fnops [RELEASE_DIR=release]
VERSION ?=
RELEASE_DIR ?= release

.PHONY: release
release: ko ## Cut release VERSION (vX.Y.Z[-pre]): linux/amd64 and linux/arm64 images pushed to KO_DOCKER_REPO, tagged VERSION, and the release YAMLs (CRDs, operator, onboarding) in RELEASE_DIR.
	VERSION="$(VERSION)" RELEASE_DIR="$(RELEASE_DIR)" hack/release.sh

.PHONY: run
run: ## Run the operator from source on an embedded control plane; CLUSTER=1: on the cluster in KUBECONFIG, in the installed operator's leader election; V=1: debug logs too.
	go run ./hack/run $(if $(CLUSTER),-cluster) $(if $(V),-v)

.PHONY: demo
demo: ## Show the operator's job (docs/demo.md): a function with old middleware found outdated and rebuilt through the real Tekton controller, kubelet and Knative simulated; V=1: the operator's logs too; EXIT=1: stop at the end.
	go run ./hack/demo $(if $(V),-v) $(if $(EXIT),-exit)

$(CONTROLLER_GEN):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $(CONTROLLER_GEN)
