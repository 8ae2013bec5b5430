package receiver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Bounds of the server: git hosts send a few KiB at once and wait about 10 s
// (GitHub) for the answer.
const (
	readHeaderTimeout = 10 * time.Second
	// bodyReadTimeout bounds the reading of a body, from when the receiver takes it.
	bodyReadTimeout = 10 * time.Second
	readTimeout     = 30 * time.Second
	writeTimeout    = 30 * time.Second
	idleTimeout     = 60 * time.Second
	maxHeaderBytes  = 64 << 10
	// maxConnections caps the connections served at once (each holds its buffers and
	// up to maxHeaderBytes): the others wait to be accepted.
	maxConnections = 256
)

// Start serves the receivers on Options.Addr until ctx ends, then lets the requests
// under way finish, for at most Options.ShutdownTimeout.
func (r *Receiver) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("webhook")
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", r.opts.Addr)
	if err != nil {
		return fmt.Errorf("listening for webhooks on %s: %w", r.opts.Addr, err)
	}
	ln = netutil.LimitListener(ln, maxConnections)
	// Requests outlive ctx for the graceful shutdown, and log with its logger.
	base := log.IntoContext(context.WithoutCancel(ctx), logger)
	srv := &http.Server{
		Handler:           r,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("serving webhook receivers", "address", ln.Addr().String(), "path", PathPrefix+"<namespace>/<secret>")
	if r.listening != nil {
		r.listening(ln.Addr())
	}
	select {
	case err := <-served:
		return fmt.Errorf("serving webhooks on %s: %w", r.opts.Addr, err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutting the webhook server down: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving webhooks on %s: %w", r.opts.Addr, err)
	}
	return nil
}

// NeedLeaderElection is true: a push enqueues Functions into the controller, which
// runs on the leader only. A replica that does not lead does not listen, so the
// Service in front must reach the leader (one replica, as deployed).
func (r *Receiver) NeedLeaderElection() bool { return true }
