package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain lets the test binary act as netctl when NETCTL_RUN_MAIN is set,
// so the tests below see real exit codes and streams of main.
func TestMain(m *testing.M) {
	if os.Getenv("NETCTL_RUN_MAIN") == "1" {
		os.Args = append([]string{"netctl"}, os.Args[1:]...)
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

func runMain(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "NETCTL_RUN_MAIN=1"), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestMainExitCodes(t *testing.T) {
	out, _, code := runMain(t, nil, "--help")
	if code != 0 || !strings.HasPrefix(out, "NAME:\n   netctl - A command line client for Contiv netplugin\n") {
		t.Errorf("help: %d %q", code, out)
	}
	_, errs, code := runMain(t, nil, "tenant", "create")
	if code != 1 || !strings.Contains(errs, `level=error msg="Tenant name required"`) {
		t.Errorf("usage: %d %q", code, errs)
	}
	_, errs, code = runMain(t, []string{"NETMASTER=http://127.0.0.1:1"}, "tenant", "ls")
	if code != 3 || !strings.Contains(errs, "cannot reach netmaster at http://127.0.0.1:1") {
		t.Errorf("unreachable: %d %q", code, errs)
	}
	_, _, code = runMain(t, nil, "net", "ls", "--bogus")
	if code != 1 {
		t.Errorf("bad flag: %d", code)
	}
}
