package logsetup

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// TestTextTimestampRFC3339 checks a text log line carries its year and
// zone: the time parses as RFC 3339 and is the moment it was logged.
func TestTextTimestampRFC3339(t *testing.T) {
	var buf bytes.Buffer
	log := logrus.New()
	log.SetOutput(&buf)
	if err := Configure(log, Options{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Truncate(time.Microsecond)
	log.Info("hello")
	after := time.Now()
	m := regexp.MustCompile(`^time="([^"]+)" level=info msg=hello`).FindStringSubmatch(buf.String())
	if m == nil {
		t.Fatalf("log line %q", buf.String())
	}
	at, err := time.Parse(time.RFC3339Nano, m[1])
	if err != nil {
		t.Fatalf("timestamp %q is not RFC 3339: %v", m[1], err)
	}
	if at.Before(before) || at.After(after) {
		t.Errorf("timestamp %s not within [%s, %s]", at, before, after)
	}
	if !strings.HasSuffix(m[1], "Z") && !regexp.MustCompile(`[+-]\d\d:\d\d$`).MatchString(m[1]) {
		t.Errorf("timestamp %q has no zone", m[1])
	}
}

func TestBadLevel(t *testing.T) {
	if err := Configure(logrus.New(), Options{Level: "loud"}); err == nil || !strings.Contains(err.Error(), "--log-level") {
		t.Errorf("error %v", err)
	}
}
