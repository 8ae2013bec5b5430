package devenv

import (
	"io"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Logger returns the development logger (controller-runtime's zap in development
// mode, human-readable) writing to w: at info level, unless verbose, when it also
// writes debug lines — among them the ~60 that envtest logs as it starts the control
// plane (controller-runtime.test-env) and the operator's `reconciled` line.
func Logger(w io.Writer, verbose bool) logr.Logger {
	level := zapcore.InfoLevel
	if verbose {
		level = zapcore.DebugLevel
	}
	return zap.New(zap.UseDevMode(true), zap.WriteTo(w), zap.Level(level))
}
