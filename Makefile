# func-operator — run `make help` for the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_TOOLS_VERSION ?= v0.16.5
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
GO_TEST_FLAGS ?= -count=1
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

.PHONY: vet
vet: ## go vet and gofmt check.
	go vet ./...
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*'))"; \
	  if [[ -n "$$unformatted" ]]; then echo "not gofmt-formatted: $$unformatted" >&2; exit 1; fi

.PHONY: control-plane
control-plane: ## Build (once, cached) etcd, kube-apiserver and kubectl for envtest.
	@hack/control-plane.sh >/dev/null

.PHONY: test
test: verify-generated vet control-plane ## Run every test against a real control plane, git servers and sshd.
	KUBEBUILDER_ASSETS="$$(hack/control-plane.sh)" go test $(GO_TEST_FLAGS) $(PKGS)

.PHONY: run
run: ## Run the operator from source against the cluster in KUBECONFIG.
	go run ./cmd/func-operator --metrics-bind-address=127.0.0.1:8080 --health-probe-bind-address=127.0.0.1:8081

$(CONTROLLER_GEN):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $(CONTROLLER_GEN)
