// Package operator assembles the func-operator manager: scheme, caches, controllers and health checks.
package operator
