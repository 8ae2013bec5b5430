# func-operator — run `make help` for the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

LOCALBIN ?= $(CURDIR)/bin
export CONTROLLER_TOOLS_VERSION ?= v0.16.5
CONTROLLER_GEN = $$(hack/controller-gen.sh)
# test/faults ran over 30 minutes with a busy core beside make test (it was 23 minutes
# into TestFaults, still stepping, when a 30m bound ended it).
GO_TEST_FLAGS ?= -count=1 -timeout 60m

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
manifests: ## Regenerate config/300-function.yaml, config/200-clusterrole.yaml and deepcopy code.
	CONTROLLER_GEN="$(CONTROLLER_GEN)" hack/update-codegen.sh

.PHONY: verify-generated
verify-generated: ## Fail when generated files are stale.
	CONTROLLER_GEN="$(CONTROLLER_GEN)" hack/update-codegen.sh --verify

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

# The oldest Kubernetes the README supports, for test/install (make control-plane-min):
# its API server, on the current control plane's etcd (hack/control-plane-min.sh).
export MIN_K8S_VERSION ?= v1.30.14

.PHONY: control-plane-min
control-plane-min: ## Build (once, cached) the API server of the oldest supported Kubernetes (MIN_K8S_VERSION), for test/install; prints its folder.
	@hack/control-plane-min.sh

.PHONY: tekton-controller
tekton-controller: ## Build (once, cached) the Tekton Pipelines controller go.mod pins, for the tests.
	@hack/tekton-controller.sh >/dev/null

.PHONY: knative-serving-controller
knative-serving-controller: ## Build (once, cached) the Knative Serving controller func pins, for the tests and make demo.
	@hack/knative-serving-controller.sh >/dev/null

.PHONY: test-deps
test-deps: ## Install git and sshd for the tests if they are missing (apt-get, as root).
	@hack/test-deps.sh

.PHONY: ko
ko: ## Build (once, cached) ko from the module proxy.
	@hack/ko.sh >/dev/null

.PHONY: promtool
promtool: ## Build (once, cached) promtool from the module proxy, for test/monitoring.
	@hack/promtool.sh >/dev/null

# make test runs every check and test as phases side by side (make -j, TEST_JOBS at once),
# each recorded by hack/phase.sh, and ends with how long each took (tools, control planes,
# checks, each test package, fuzz). Two lanes (docs/development.md#make-test):
# - the project's module graph, at full priority: the control plane, the Tekton controller
#   (both built in it: hack/lib/project-module.sh), then vet, which compiles the rest of
#   what the tests link; every test phase waits for vet. Until then one go command at a
#   time compiles in this graph: two compiling one package at once both compile it (the
#   build cache holds a result, not a build in progress), and they share about a thousand
#   packages (after vet, the test phases only link, but for their own test files);
# - niced beside it, what shares no compiled package with that graph: tools in modules of
#   their own, the release's linux/arm64 compile, the fuzzer's instrumented build.
# Everything builds as ko builds the shipped binary (CGO_ENABLED=0, -trimpath, and
# PROJECT_GCFLAGS: hack/lib/project-module.sh), so the tests, the binary the fault suite
# runs and ko's images share one compile of each package; test binaries link without
# DWARF (-ldflags=-w: no debugger runs them here, and it is most of a link), and so the
# compiler writes none either. go test vets nothing (-vet=off): check-vet's go vet ./...
# runs every analyzer of vet's on every package, test files included, once; go test would
# run a subset of them again for each test package (2.5 minutes of a run's CPU).
PROJECT_GCFLAGS := $(shell . hack/lib/project-module.sh && echo "$${PROJECT_GCFLAGS}")
TEST_JOBS ?= 5
PHASES_DIR ?= $(LOCALBIN)/phases
# A phase's target always succeeds: hack/phase.sh records how it ended and the summary
# fails the run, so that one failure neither stops nor hides the phases after it (a failed
# tool build fails the tests that need it, and only those).
PHASE = PHASES_DIR=$(PHASES_DIR) hack/phase.sh run-recorded
# What no test waits for first runs at a lower priority: it takes the CPU the critical
# path leaves idle (links, waits for the operator, the API server, a timeout).
BACKGROUND = nice -n 10
# GOGC for everything make test runs, but the operator binary the fault suite runs (it
# gets its Deployment's environment, GOGC=75 included): the compiler and the linker
# spend less CPU collecting garbage with a larger heap (hack/lib/project-module.sh), and
# so do the API servers, etcd, the Tekton controllers and the test binaries. A GOGC set
# by the caller wins.
MAKE_TEST_GOGC ?= 400
# Test packages by the tools they need besides the control plane; every other package
# needs at most the control plane (test-plane). TEKTON_PKGS run the real Tekton and Knative
# Serving controllers.
TEKTON_PKGS ?= ./pkg/operator/ ./test/faults/ ./test/tekton/ ./test/knative/ ./hack/demo/
INSTALL_PKGS ?= ./test/install/
MONITORING_PKGS ?= ./test/monitoring/
# The quick tier's packages that run whole under -short (hack/quick-complete.sh) run there
# only; test-plane runs every other package, the rest of the quick tier's included.
PLANE_PKGS ?= $$(go list ./... | grep -v -x -F -f <(go list $(TEKTON_PKGS) $(INSTALL_PKGS) $(MONITORING_PKGS); hack/quick-complete.sh $(UNIT_PKGS)))
CONTROL_PLANE = $$(hack/control-plane.sh)
CONTROL_PLANE_MIN = $$(hack/control-plane-min.sh)
TEST_ENV = KUBEBUILDER_ASSETS="$(CONTROL_PLANE)" FUNC_OPERATOR_REQUIRE_SSHD=1 FUNC_OPERATOR_REQUIRE_ALL=1
# In the order make starts them when it can (TEST_JOBS at once).
TEST_PHASES = tool-control-plane tool-ko build-arm64 tool-tekton tool-knative-serving check-vet test-tekton test-quick test-plane \
	tool-control-plane-min test-install tool-promtool test-monitoring fuzz-short tool-controller-gen \
	check-tracked-files check-third-party check-generated tool-golangci-lint check-lint

.PHONY: test
test: test-deps ## Run every check and test (real control planes, Tekton controller, git servers, sshd, ko, promtool, lint, fuzz-short), side by side; ends with each phase's time.
	@rm -rf $(PHASES_DIR) && mkdir -p $(PHASES_DIR) && date +%s > $(PHASES_DIR)/.start
	@status=0; GOGC="$${GOGC:-$(MAKE_TEST_GOGC)}" CGO_ENABLED=0 GOFLAGS="$(GOFLAGS) -trimpath -gcflags=$(PROJECT_GCFLAGS) -ldflags=-w -vet=off" $(MAKE) --no-print-directory -k -j$(TEST_JOBS) $(addprefix phase-,$(TEST_PHASES)) || status=$$?; \
		PHASES_DIR=$(PHASES_DIR) EXPECT="$(TEST_PHASES)" hack/phase.sh summary || status=1; exit $$status

.PHONY: $(addprefix phase-,$(TEST_PHASES))
# The project's graph: the control plane, the Tekton and Serving controllers, vet; then the tests.
phase-tool-control-plane:
	@$(PHASE) tool-control-plane hack/control-plane.sh
phase-tool-tekton: phase-tool-control-plane
	@$(PHASE) tool-tekton hack/tekton-controller.sh
phase-tool-knative-serving: phase-tool-tekton
	@$(PHASE) tool-knative-serving hack/knative-serving-controller.sh
phase-check-vet: phase-tool-knative-serving
	@$(PHASE) check-vet go vet ./...

# Niced beside it, one chain, in the order the tests need them: ko and the operator's
# linux/arm64 compile (TestRelease's, which then only links), the 1.30 API server,
# promtool; fuzzing, lint and controller-gen, which no test waits for, last. Three
# chains side by side took a cold run from 52 to 55 minutes: on 2 cores every build
# beside another costs more CPU (the control plane 20 min instead of 18).
phase-tool-ko:
	@$(PHASE) tool-ko $(BACKGROUND) hack/ko.sh
phase-build-arm64: phase-tool-ko
	@$(PHASE) build-arm64 $(BACKGROUND) env GOOS=linux GOARCH=arm64 go build -o /dev/null ./cmd/func-operator
phase-tool-control-plane-min: phase-build-arm64
	@$(PHASE) tool-control-plane-min $(BACKGROUND) hack/control-plane-min.sh --api-server-only
phase-tool-promtool: phase-build-arm64
	@$(PHASE) tool-promtool $(BACKGROUND) hack/promtool.sh
# One fuzzing worker per target (-parallel=1): the other core is the other phases'.
phase-fuzz-short: phase-tool-promtool
	@$(PHASE) fuzz-short $(BACKGROUND) $(MAKE) --no-print-directory fuzz-short FUZZ_FLAGS="$(FUZZ_FLAGS) -parallel=1"
phase-tool-golangci-lint: phase-fuzz-short
	@$(PHASE) tool-golangci-lint $(BACKGROUND) hack/golangci-lint.sh
phase-check-lint: phase-tool-golangci-lint
	@$(PHASE) check-lint $(BACKGROUND) bash -c '"$$(hack/golangci-lint.sh)" run ./...'
phase-tool-controller-gen: phase-tool-golangci-lint
	@$(PHASE) tool-controller-gen $(BACKGROUND) hack/controller-gen.sh
phase-check-generated: phase-tool-controller-gen
	@$(PHASE) check-generated bash -c 'CONTROLLER_GEN="$(CONTROLLER_GEN)" hack/update-codegen.sh --verify'
phase-check-tracked-files:
	@$(PHASE) check-tracked-files hack/verify-tracked-files.sh
phase-check-third-party:
	@$(PHASE) check-third-party hack/update-third-party.sh --verify

# The tests, once vet has compiled what they link and their tools are built; the quick
# tier niced (its packages are the smallest).
phase-test-quick: phase-check-vet
	@$(PHASE) test-quick $(BACKGROUND) env FUNC_OPERATOR_REQUIRE_SSHD=1 go test -short -count=1 $(UNIT_PKGS)
phase-test-plane: phase-check-vet
	@$(PHASE) test-plane bash -c '$(TEST_ENV) go test $(GO_TEST_FLAGS) $(PLANE_PKGS)'
phase-test-tekton: phase-check-vet
	@$(PHASE) test-tekton bash -c '$(TEST_ENV) FUNC_OPERATOR_TEKTON_CONTROLLER="$$(hack/tekton-controller.sh)" FUNC_OPERATOR_KNATIVE_SERVING_CONTROLLER="$$(hack/knative-serving-controller.sh)" go test $(GO_TEST_FLAGS) $(TEKTON_PKGS)'
phase-test-install: phase-check-vet phase-tool-control-plane-min phase-tool-ko phase-build-arm64
	@$(PHASE) test-install bash -c '$(TEST_ENV) FUNC_OPERATOR_KUBEBUILDER_ASSETS_MIN="$(CONTROL_PLANE_MIN)" FUNC_OPERATOR_KO="$$(hack/ko.sh)" go test $(GO_TEST_FLAGS) $(INSTALL_PKGS)'
phase-test-monitoring: phase-check-vet phase-tool-promtool
	@$(PHASE) test-monitoring bash -c '$(TEST_ENV) FUNC_OPERATOR_PROMTOOL="$$(hack/promtool.sh)" go test $(GO_TEST_FLAGS) $(MONITORING_PKGS)'

# The quick tier: every package but the integration ones (pkg/operator wires the manager,
# test/ runs the binary, hack/run runs make run), with -short: tests that need a control
# plane (envtest.Shared, envtest.StartT) or build the binary skip. Pure logic and
# loopback git servers only: no Tekton controller, no ko.
UNIT_PKGS ?= $$(go list ./... | grep -v -e /test/ -e /pkg/operator -e /hack/) ./test/hygiene/

.PHONY: test-unit
test-unit: ## The quick tier: go test -short over the non-integration packages, no control plane (make test runs everything).
	go test -short -count=1 $(UNIT_PKGS)

# The middle tier: the quick tier's packages whole, and every other one that needs only a
# real control plane (kube-apiserver, etcd, kube-controller-manager's controllers), git
# servers and sshd: not the Tekton controller, ko or promtool (TEKTON_PKGS, INSTALL_PKGS,
# MONITORING_PKGS). make test's test-quick and test-plane, in one go test.
INTEGRATION_PKGS ?= $$(go list ./... | grep -v -x -F -f <(go list $(TEKTON_PKGS) $(INSTALL_PKGS) $(MONITORING_PKGS)))

.PHONY: test-integration
test-integration: test-deps control-plane ## The middle tier: every test that needs no Tekton controller, ko or promtool, on a real control plane.
	KUBEBUILDER_ASSETS="$(CONTROL_PLANE)" FUNC_OPERATOR_REQUIRE_SSHD=1 go test $(GO_TEST_FLAGS) $(INTEGRATION_PKGS)

# The func-facing tests, for a func bump (docs/upgrading-func.md): the adapter on a real
# API server with func's real templates, the middleware table and image labels, the Tekton
# controller with the kubelet simulation, and the operator's rebuild and func deploy tests.
FUNC_PKGS ?= ./pkg/funclib/ ./pkg/middleware/ ./pkg/registry/ ./test/tekton/ ./test/knative/
FUNC_OPERATOR_TESTS ?= Rebuild|Build|Fleet|FuncDeploy|Knative|NamespaceNotOnboarded|UpstreamFunction

.PHONY: test-func
test-func: test-deps control-plane tekton-controller knative-serving-controller ## Run the func-facing tests alone (first step of a func bump).
	KUBEBUILDER_ASSETS="$$(hack/control-plane.sh)" FUNC_OPERATOR_TEKTON_CONTROLLER="$$(hack/tekton-controller.sh)" FUNC_OPERATOR_KNATIVE_SERVING_CONTROLLER="$$(hack/knative-serving-controller.sh)" FUNC_OPERATOR_REQUIRE_SSHD=1 \
		go test $(GO_TEST_FLAGS) $(FUNC_PKGS)
	KUBEBUILDER_ASSETS="$$(hack/control-plane.sh)" FUNC_OPERATOR_TEKTON_CONTROLLER="$$(hack/tekton-controller.sh)" FUNC_OPERATOR_KNATIVE_SERVING_CONTROLLER="$$(hack/knative-serving-controller.sh)" FUNC_OPERATOR_REQUIRE_SSHD=1 \
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
	./pkg/funclib/funcyaml:FuzzLoadFuncYAML \
	./pkg/funclib/funcyaml:FuzzCheckNoLocalEnv \
	./pkg/git:FuzzRepositoryURL \
	./pkg/git:FuzzRepositoryPath \
	./pkg/git:FuzzRemoteHead \
	./pkg/git:FuzzTreeEntries \
	./pkg/registry:FuzzKeychain \
	./pkg/registry:FuzzBuildInfo \
	./pkg/repourl:FuzzNormalizeURL \
	./pkg/text:FuzzCut
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
fuzz-short: ## Fuzz each of FUZZ_TARGETS for 10s (make test runs it as a phase).
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
demo: ## Show the operator's job (docs/demo.md): a function with old middleware found outdated and rebuilt through the real Tekton and Knative Serving controllers, the kubelet and Knative's autoscaler and networking simulated; V=1: the operator's logs too; EXIT=1: stop at the end.
	go run ./hack/demo $(if $(V),-v) $(if $(EXIT),-exit)
