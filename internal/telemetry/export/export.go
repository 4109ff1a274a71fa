// Package export turns nerve's tracing on (internal/telemetry) with the
// OpenTelemetry SDK, configured by the standard OTEL_* variables: the SDK
// reads the sampler, the batch processor's settings, the service name and
// the resource's attributes itself; the OTLP/HTTP exporter (otlp.go) reads
// the endpoint, headers, timeout, compression and certificates as the OTLP
// exporter specification says (docs/observability.md). Tracing is off
// unless an OTLP endpoint is named.
//
// The command line and the daemon import it (internal/cli); nothing else
// links the SDK.
package export

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/nerve-dev/nerve/internal/telemetry"
)

// Wanted reports whether the OTEL_* variables ask for traces: an OTLP
// endpoint is named (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and neither OTEL_SDK_DISABLED=true
// nor OTEL_TRACES_EXPORTER=none says no. A variable is read with getenv
// (the process's environment), else from extra (NAME=value lines: nerve's
// env file). It costs a few lookups: `nerve call` asks it on every run.
func Wanted(getenv func(string) string, extra []string) bool {
	get := func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return lookup(extra, k)
	}
	if get("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(get("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	return !strings.EqualFold(strings.TrimSpace(get("OTEL_TRACES_EXPORTER")), "none")
}

// lookup is the last value of k in env (NAME=value lines).
func lookup(env []string, k string) string {
	v := ""
	for _, kv := range env {
		if name, val, ok := strings.Cut(kv, "="); ok && name == k {
			v = val
		}
	}
	return v
}

// withEnv runs f with each OTEL_* variable of extra that the process's
// environment lacks set in it, and unset again after: the SDK reads the
// process's environment, and the programs the daemon starts must not
// inherit the env file's variables this way.
func withEnv(extra []string, f func()) {
	var set []string
	for _, kv := range extra {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, "OTEL_") {
			continue
		}
		if _, had := os.LookupEnv(k); had && !slices.Contains(set, k) {
			continue
		}
		if os.Setenv(k, v) == nil && !slices.Contains(set, k) {
			set = append(set, k)
		}
	}
	defer func() {
		for _, k := range set {
			_ = os.Unsetenv(k)
		}
	}()
	f()
}

// Role says which program exports: its resource's nerve.process and how
// it exports.
type Role string

const (
	// CLI is a command that exits soon: its spans are sent at exit, each
	// export tried once (no retry), so a collector that is not there
	// costs a refused connection, not a wait.
	CLI Role = "cli"
	// Daemon is the long-lived daemon: spans are sent in batches, and an
	// export the collector turns away for now (429, 502, 503, 504) is
	// tried again (internal/httpretry).
	Daemon Role = "daemon"
)

// Start installs a tracer provider that exports over OTLP/HTTP as the
// OTEL_* variables say — the process's, else extra's (nerve's env file) —
// and returns the function that flushes what is queued and stops it
// (bounded by its context). The SDK's own failures (an export the
// collector refused) go to onError, if set, and never to the terminal.
// Call it only when Wanted.
func Start(ctx context.Context, role Role, extra []string, onError func(error)) (shutdown func(context.Context) error, err error) {
	withEnv(extra, func() { shutdown, err = start(ctx, role, onError) })
	return shutdown, err
}

func start(ctx context.Context, role Role, onError func(error)) (shutdown func(context.Context) error, err error) {
	// The process's variables, then the env file's (withEnv set them).
	exp, err := newExporter(os.Getenv, role)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "nerve")),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK(),
		resource.WithProcessPID(),
		resource.WithAttributes(attribute.String("nerve.process", string(role))),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	// The sampler comes from OTEL_TRACES_SAMPLER (and _ARG), read by
	// NewTracerProvider; its default samples every root and follows the
	// parent.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		if onError != nil {
			onError(err)
		}
	}))
	telemetry.Install(tp)
	return func(ctx context.Context) error {
		telemetry.Install(nil)
		return tp.Shutdown(ctx)
	}, nil
}

// CLIFlush bounds how long a command waits at exit for its span to be
// sent, unless OTEL_EXPORTER_OTLP_TIMEOUT names another bound
// (docs/observability.md): a collector on this machine answers in about a
// millisecond, one that is not listening refuses at once; only one that
// takes the connection and never answers costs the whole wait.
const CLIFlush = 100 * time.Millisecond
