package controllers

import (
	"testing"

	"go.uber.org/goleak"
)

// The controllers are tested black-box through whole leadership terms in
// netmaster/master (its env harness serves a term over embedded etcd);
// this package holds the tests of its pure parts.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
