// Package config holds the operator-wide settings read from the ConfigMap func-operator-config.
package config
