package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/daemon"
	"github.com/nerve-dev/nerve/internal/envfile"
	"github.com/nerve-dev/nerve/internal/paths"
	"github.com/nerve-dev/nerve/internal/telemetry"
	"github.com/nerve-dev/nerve/internal/telemetry/export"
)

// traceCall starts the trace of `nerve call` on node (docs/observability.md):
// under the TRACEPARENT the command was given, if any, which goes on to
// the daemon even when this nerve exports nothing. A process that runs
// this one command exports its span when the OTEL_* variables of its
// environment, or of nerve's env file, name an OTLP endpoint; the
// returned function ends the span and sends it, waiting at most
// export.CLIFlush (or OTEL_EXPORTER_OTLP_TIMEOUT).
func (e *Env) traceCall(ctx context.Context, node string) (context.Context, func(error)) {
	ctx = telemetry.FromEnviron(ctx, e.getenv)
	if !e.oneCommand || telemetry.On() {
		return ctx, func(error) {}
	}
	var extra []string
	if !export.Wanted(e.getenv, nil) {
		p, err := e.paths()
		if err != nil {
			return ctx, func(error) {}
		}
		if extra, _ = envfile.Environ(daemon.EnvFile(p)); !export.Wanted(e.getenv, extra) {
			return ctx, func(error) {}
		}
	}
	shutdown, err := export.Start(ctx, export.CLI, extra, nil)
	if err != nil {
		fmt.Fprintf(e.Stderr, "nerve: warning: no traces are sent: %v\n", err)
		return ctx, func(error) {}
	}
	ctx, span := telemetry.CLICall(ctx, node)
	return ctx, func(err error) {
		if errors.Is(err, errToolFailed) {
			span.EndCall(true, nil)
		} else {
			span.EndCall(false, err)
		}
		// The export is bounded by its own timeout (export.CLIFlush).
		_ = shutdown(context.WithoutCancel(ctx))
	}
}

// startTracing makes the daemon export its spans when the OTEL_*
// variables of its environment, or else of nerve's env file, name an OTLP
// endpoint (read once, as it starts: docs/observability.md). The returned
// function sends what is queued, waiting at most 5 s.
func startTracing(ctx context.Context, p paths.Paths, getenv func(string) string, log *zap.Logger) (stop func()) {
	extra, _ := envfile.Environ(daemon.EnvFile(p))
	if !export.Wanted(getenv, extra) {
		return func() {}
	}
	shutdown, err := export.Start(ctx, export.Daemon, extra, func(err error) {
		log.Warn("exporting traces", zap.Error(err))
	})
	if err != nil {
		log.Warn("no traces are sent", zap.Error(err))
		return func() {}
	}
	log.Info("tracing on: spans are exported over OTLP")
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("sending the last spans", zap.Error(err))
		}
	}
}
