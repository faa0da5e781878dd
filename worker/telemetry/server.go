package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"
)

// ShutdownTimeout bounds how long Serve waits for in-flight requests once its
// context is done.
const ShutdownTimeout = 5 * time.Second

// Handler serves /metrics (m's registry), /healthz (200 while the process
// runs) and /readyz (200 when ready returns nil, else 503 with its error; a
// nil ready is always ready). Each /readyz probe also sets flops_worker_ready.
func Handler(m *Metrics, ready func() error) http.Handler {
	mux := http.NewServeMux()
	metrics := promhttp.InstrumentMetricHandler(m.reg, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:          m.reg,
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	}))
	mux.Handle("GET /metrics", metrics)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		var err error
		if ready != nil {
			err = ready()
		}
		m.SetReady(err == nil)
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
		_, _ = fmt.Fprintln(w, "ready")
	})
	return mux
}

// Server is the worker's telemetry HTTP server on addr (e.g. ":9464"), with
// timeouts so a slow client cannot hold it. Run it with Serve.
func Server(addr string, m *Metrics, ready func() error) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           Handler(m, ready),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
}

// Serve runs srv on ln (or, when ln is nil, on a listener for srv.Addr) until
// ctx is done, then shuts it down within ShutdownTimeout. It returns nil after
// a clean shutdown.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener) error {
	if ln == nil {
		var err error
		if ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", srv.Addr); err != nil {
			return fmt.Errorf("telemetry listen %s: %w", srv.Addr, err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("telemetry server: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done() // ctx done, or Serve failed
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil {
			return fmt.Errorf("telemetry server shutdown: %w", err)
		}
		return nil
	})
	return g.Wait()
}
