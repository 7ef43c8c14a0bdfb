package logtest

import (
	"testing"

	"github.com/sirupsen/logrus"
)

func TestNew(t *testing.T) {
	l := New(t, logrus.InfoLevel)
	l.Info("goes to t.Log with -v, nowhere otherwise")
	if n, err := Writer(t).Write([]byte("line\n")); n != 5 || err != nil {
		t.Fatalf("Write = %d, %v; want 5, nil", n, err)
	}
}
