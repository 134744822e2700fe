//go:build tools

// Package tools pins the Jaeger command this module builds.
package tools

import (
	_ "github.com/jaegertracing/jaeger/cmd/all-in-one"
)
