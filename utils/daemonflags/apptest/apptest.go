// Package apptest runs a daemon's command line (daemonflags.App) inside a
// test: the environment is set for the test only, the application never
// calls os.Exit, and the exit code and message come back to be checked.
package apptest

import (
	"errors"
	"testing"

	"github.com/urfave/cli"
)

// Run sets env for the duration of the test, runs app with args (the
// binary name, app.Name, is added in front) and returns the exit code (0
// when the run returned no cli.ExitCoder) and the error's text ("" when
// the run succeeded).
func Run(t testing.TB, app *cli.App, env map[string]string, args ...string) (code int, msg string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	app.ExitErrHandler = func(*cli.Context, error) {} // never os.Exit in tests
	err := app.Run(append([]string{app.Name}, args...))
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	}
	if err != nil {
		msg = err.Error()
	}
	return code, msg
}
