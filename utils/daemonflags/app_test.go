package daemonflags_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli"

	"github.com/contiv/netplugin/utils/daemonflags"
	"github.com/contiv/netplugin/utils/daemonflags/apptest"
)

type appCfg struct{ Port int }

// run runs a test daemon's App and returns the exit code, the message and
// the configuration its Run saw.
func run(t *testing.T, parseErr, runErr error, args ...string) (int, string, *appCfg) {
	t.Helper()
	var seen *appCfg
	app := daemonflags.App(daemonflags.AppSpec[appCfg]{
		Name: "testd", Usage: "a test daemon", Bin: "TESTD",
		Flags: []cli.Flag{cli.IntFlag{Name: "port", Value: 7}},
		Parse: func(c *cli.Context) (appCfg, error) {
			if _, err := daemonflags.FromContext(c); err != nil {
				return appCfg{}, err
			}
			return appCfg{Port: c.Int("port")}, parseErr
		},
		Run: func(ctx context.Context, cfg appCfg, _ *logrus.Entry) error {
			if ctx.Err() != nil {
				t.Error("Run got an ended context")
			}
			seen = &cfg
			return runErr
		},
	})
	code, msg := apptest.Run(t, app, nil, append([]string{"--mode", "test", "--netmode", "vxlan", "--fwdmode", "routing"}, args...)...)
	return code, msg, seen
}

func TestAppRunsWithParsedConfig(t *testing.T) {
	code, msg, seen := run(t, nil, nil, "--port", "9")
	if code != 0 || msg != "" || seen == nil || seen.Port != 9 {
		t.Fatalf("exit %d %q, Run saw %+v", code, msg, seen)
	}
}

func TestAppExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name             string
		parseErr, runErr error
		args             []string
		wantCode         int
		wantMsg          string
		wantRun          bool
	}{
		{"positional argument", nil, nil, []string{"extra"}, daemonflags.ExitInvalid, "unexpected arguments: extra", false},
		{"parse error", errors.New("bad flag"), nil, nil, daemonflags.ExitInvalid, "testd: bad flag", false},
		{"bad log level", nil, nil, []string{"--log-level", "loud"}, daemonflags.ExitInvalid, "", false},
		{"run error", nil, errors.New("store gone"), nil, 1, "testd: store gone", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg, seen := run(t, tc.parseErr, tc.runErr, tc.args...)
			if code != tc.wantCode || (tc.wantMsg != "" && msg != tc.wantMsg) || (seen != nil) != tc.wantRun {
				t.Fatalf("exit %d %q, ran %v", code, msg, seen != nil)
			}
		})
	}
}
