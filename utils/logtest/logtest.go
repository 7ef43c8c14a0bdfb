// Package logtest routes a component's logrus output into a test's log.
package logtest

import (
	"io"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// New returns a logger that is silent unless the test runs with -v; then
// every entry at level or above goes to t.Log.
func New(t testing.TB, level logrus.Level) *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	if testing.Verbose() {
		l.SetOutput(Writer(t))
		l.SetLevel(level)
	}
	return l
}

// Writer writes each write to t.Log, without the trailing newline.
func Writer(t testing.TB) io.Writer { return writer{t} }

type writer struct{ t testing.TB }

func (w writer) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
