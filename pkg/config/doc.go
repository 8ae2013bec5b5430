// Package config holds the operator-wide settings read from the ConfigMap
// func-operator-config: their keys, defaults and bounds, and the watcher that reloads
// them.
//
// It must not import the packages that read the settings (pkg/reconciler, pkg/operator,
// pkg/git, pkg/registry, pkg/receiver): they are handed a Config.
package config
